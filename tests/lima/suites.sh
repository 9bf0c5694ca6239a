#!/bin/sh
# The suites of the real-Lima tier, in the order `make check-lima` runs
# them (tests/lima/README.md says what each proves there).
echo lifecycle exec copy service crash lifetimes
