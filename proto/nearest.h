/*
 * The "did you mean" rule, one for the daemon's flags and the CLI's
 * commands and options: the candidate a word is a typo of.
 */
#ifndef AGENTLANE_NEAREST_H
#define AGENTLANE_NEAREST_H

#include <stddef.h>

/*
 * The candidate nearest word (at most two edits, an adjacent
 * transposition counted as one, and at most a third of a short word; a
 * start of three letters or more of a candidate counts as one edit), or
 * NULL if none is near.
 */
const char *nearest_word(const char *word, const char *const *cands,
    size_t n);

#endif
