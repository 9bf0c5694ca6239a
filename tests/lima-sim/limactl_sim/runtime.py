"""Process-wide settings of one limactl invocation: the version it claims,
its VM type, the launcher's path, $LIMA_HOME and whether a terminal is
available.  Every other module reads them here; cli sets them."""

import os

# The `limactl` launcher, which `start` runs again as `limactl hostagent`.
# cli.main() sets it from the launcher that started this process.
SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'limactl')
# `--version` prints LIMA_VERSION (cobra's Version, "v" trimmed); `info`,
# lima-version and version checks use VERSION (Lima's version.Version, as
# its release builds set it: "v2.2.0").
LIMA_VERSION = (os.environ.get('LIMA_SIM_VERSION') or '2.2.0').lstrip('v')
VERSION = 'v' + LIMA_VERSION
VM_TYPE = 'qemu'
# The guest's network, as `info` reports it: the simulator's guests have
# only `lo`, so no egress rule can be loaded or tested in them. Real Lima
# prints no such key.
GUEST_NETWORK = 'none'


class TTY:
    """--tty / --yes, or whether stdout is a terminal (cli.apply_globals)."""
    value = False


_HOME = None


def lima_home():
    global _HOME
    if _HOME is None:
        d = os.environ.get('LIMA_HOME') or os.path.join(os.path.expanduser('~'), '.lima')
        d = os.path.abspath(d)
        if os.path.exists(d):
            d = os.path.realpath(d)
        _HOME = d
    return _HOME
