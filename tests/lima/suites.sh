#!/bin/sh
# The suites of the real-Lima tier, in the order `make check-lima` runs
# them (tests/lima/README.md says what each proves there): the regress
# suites that are not specific to the simulator, then the checks only real
# Lima and a real guest can make.
echo lifecycle exec copy service crash lifetimes run pool exec-channel tty \
    images commit lane-secrets broker poolsecret vm netpolicy docker sandcastle
