"""limactl simulator: a test double of Lima's `limactl` (2.2.0) for Agent
Lane's tests.  The daemon's real Lima driver runs against it on Linux CI
machines, where no VM can boot.  Each "VM" is a bubblewrap sandbox whose
root filesystem persists under $LIMA_HOME/NAME/guestfs; `shell` enters it
with nsenter and relays stdio through pipes the way an ssh client would.

Test code only: never installed.  Entry point: the `limactl` launcher next
to this package (it keeps the bytecode cached outside the source tree).
See README.md, "Modules", for what each module does.

Import rule: modules import the leaf modules' names directly (errors,
quoting, logrus) and every other module as a module (`guestfs.guest_home()`),
so that a test can replace a function in one place for every caller.
"""
