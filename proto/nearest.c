#include <string.h>

#include "nearest.h"

#define NEAREST_MAX 2

/*
 * The optimal string alignment distance of a and b (edits, adjacent
 * transpositions counted as one), capped at NEAREST_MAX + 1.
 */
static size_t
edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), d[34][34];

	if (la > 32 || lb > 32)
		return NEAREST_MAX + 1;
	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++)
		for (size_t j = 1; j <= lb; j++) {
			size_t c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);

			if (d[i - 1][j] + 1 < c)
				c = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < c)
				c = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < c)
				c = d[i - 2][j - 2] + 1;
			d[i][j] = c;
		}
	return d[la][lb];
}

const char *
nearest_word(const char *word, const char *const *cands, size_t n)
{
	const char *best = NULL;
	size_t bestd = NEAREST_MAX + 1, len = strlen(word);

	for (size_t i = 0; i < n; i++) {
		size_t d = edit_distance(word, cands[i]);

		/* A start of the word counts as one edit: --mem, --cpu. */
		if (len >= 3 && strncmp(cands[i], word, len) == 0 && d > 1)
			d = 1;
		/* At most a third of a short word may change. */
		if (d < bestd && d * 3 <= len + 1) {
			best = cands[i];
			bestd = d;
		}
	}
	return best;
}
