#!/usr/bin/env bash
# The Sandcastle end to end on real Lima (part of `make check-lima`): the
# provider's node tests that boot lanes through the real @ai-hero/sandcastle
# package, run against agent-laned driving Lima 2.2's own limactl:
# image.test.mjs (lima({ image }) and lima({ provision }) with real clones,
# and createSandbox + run with the real claudeCode() agent definition
# against a fake `claude` the provision script installs, whose commit must
# reach the host branch) and e2e.test.mjs (a fake agent's commit and
# uncommitted work come back; close() destroys the lane), and
# secrets-e2e.test.mjs (the key reaches the upstream, never the guest).
# Sandcastle abandons a create() after a fixed 120 s, shorter than a cold
# boot under TCG here: on real Lima the tests make each lane first through
# the provider's own createLaneHandle() and create() hands it over
# (sandboxFor in test-support/harness.mjs); the rest is Sandcastle's run.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/tier.sh"
lima_tier_enter "Sandcastle on real Lima" "$0" "$@"
REPO=$(cd "$HERE/../.." && pwd)
cd "$REPO/client/sandcastle" || exit 1
[ -d node_modules/@ai-hero/sandcastle ] ||
    { echo "not ok 1 - client/sandcastle has no node_modules (npm ci)"; exit 1; }
[ -f dist/index.js ] || { echo "not ok 1 - client/sandcastle is not built (make node)"; exit 1; }
# The harness takes the limactl to drive from LIMA_SIM; the daemon takes
# the base template and QEMU wrapper from the environment.
export AL_TEST_BOOT_S=$AL_BOOT_S
exec node --test --test-reporter=tap --test-concurrency=1 \
    test/image.test.mjs test/e2e.test.mjs test/secrets-e2e.test.mjs
