# agent-lane guest helper: runs one command inside a lane for agent-laned.
# It is passed to the guest as `perl -e` through `limactl shell`; full-line
# comments and indentation are stripped at build time. See docs/protocol.md
# ("Guest helper") for the frame format. Only perl builtins: the guest is a
# Linux VM (constants below are Linux's) and startup time matters.
#
# Input frames (type byte, 32-bit big-endian length, payload):
#   C cwd   E NAME=VALUE   A argv element   D direct stdin   R run
#   I stdin bytes   Z close the command's stdin
#   T rows cols (before R: give the command a pseudo-terminal)
#   W rows cols (after R: the terminal was resized)
# T and W carry two 16-bit big-endian numbers. With T the command leads a
# new session whose controlling terminal is the pty's slave, its stdin,
# stdout and stderr; what it writes arrives as O, I is typed input (a ^C
# byte interrupts it, as on any terminal) and Z types ^D, the nearest a
# terminal has to an end of input. The pty is allocated with /dev/ptmx and the
# Linux ioctls TIOCSPTLCK, TIOCGPTN, TIOCSCTTY and TIOCSWINSZ, by number:
# perl has no openpty, IO::Pty is not in a base install, and the numbers
# are the same on every Linux architecture a lane runs (asm-generic).
# With D the command reads this program's own stdin, unframed, after P is
# sent (the daemon sends nothing after R until then); it ends at EOF.
# End of input without Z after R means agent-laned (or the client) is gone:
# the command's whole process group is killed.
# Output: the magic line, then P pid, O stdout, E stderr, X exit status
# ("c<code>" or "s<signal>"), or F failure ("cwd\0errno\0message"), and
# K n (32-bit big-endian): n more bytes of I input were taken (written to
# the command, or dropped once its stdin closed; the ^D a tty's Z types is
# not I input). agent-laned keeps at most
# 1 MiB unacknowledged, so this program reads its input all the time, and
# sees the channel close even while the command leaves its stdin unread.
#
# Channel mode (`perl -e PROGRAM mux`): one helper kept running for all the
# execs of a lane, over one `limactl shell`, so that an exec pays neither
# ssh, nor a login shell, nor compiling this program. Every frame on the
# channel, both ways, is a type byte, a 32-bit big-endian exec id, a 32-bit
# big-endian length and the payload. In:
#   N id window  start an exec; window (32-bit): output bytes it may send
#   M id bytes   the exec's input: the one-exec frames above, as they are
#   G id n       the exec may send n more output bytes (32-bit)
#   Q id         the exec is over for agent-laned: its pipes are closed, so
#                its helper kills the command's process group
# Out: the line "\0ALGM01\n", then M id bytes (the exec's one-exec output,
# magic line first) and Q id (that output ended). Each exec runs in a child
# of the channel helper, which is the one-exec program below with its stdin
# and stdout on two pipes; the child keeps no descriptor of the channel or of
# another exec. The channel helper reads an exec's output only while its
# window is open, so agent-laned buffers at most a window per exec, and a
# stalled exec stalls nothing else; input it queues is bounded by the 1 MiB
# of unacknowledged I bytes agent-laned allows each exec. At the channel's
# end of input it exits: every exec's pipes close, and each kills its
# command's process group.
use strict;
$SIG{PIPE} = "IGNORE";
my ($EINTR, $EAGAIN, $O_NONBLOCK, $F_GETFL, $F_SETFL, $F_SETPIPE_SZ) =
    (4, 11, 2048, 3, 4, 1031);
sub nonblock {
    my $fl = fcntl($_[0], $F_GETFL, 0);
    fcntl($_[0], $F_SETFL, $fl | $O_NONBLOCK) if defined($fl);
}
sub wall {
    my ($m) = @_;
    my $o = 0;
    while ($o < length($m)) {
        my $w = syswrite(STDOUT, $m, length($m) - $o, $o);
        if (!defined($w)) {
            next if $! == $EINTR;
            return 0;
        }
        $o += $w;
    }
    return 1;
}
# Returns only in a new exec's child, which then runs the one-exec program.
sub mux {
    my (%x, $cin) = ();
    $cin = "";
    binmode STDIN;
    binmode STDOUT;
    wall("\0ALGM01\n") or exit(3);
    # An exec's helper that exited is reaped at once: its exit wakes the
    # select() below through this pipe (see the one-exec program's).
    pipe(my $sig_r, my $sig_w) or exit(3);
    nonblock($sig_r); nonblock($sig_w);
    $SIG{CHLD} = sub { syswrite($sig_w, "x"); };
    # A spare: the next exec's child, forked while the channel is idle. Its
    # fork and its keeper's are then off the exec's path (under emulation
    # each is tens of ms of a small command's time). It waits for its setup
    # frames as a child forked on N does; it holds no other exec's pipes.
    my $spare;
    my $spawn = sub {
        my ($ir, $iw, $or, $ow, $p);
        pipe($ir, $iw) or return undef;
        if (!pipe($or, $ow)) { close($ir); close($iw); return undef; }
        $p = fork();
        if (!defined($p)) { close($_) for ($ir, $iw, $or, $ow); return undef; }
        if ($p == 0) {
            # Named for what it is until its exec's setup ends (R).
            $0 = "agent-lane-spare";
            $SIG{CHLD} = "DEFAULT";
            for my $o (values %x) { close($o->{o}); close($o->{i}) if $o->{i}; }
            if ($spare) { close($spare->{o}); close($spare->{i}); }
            close($iw); close($or); close($sig_r); close($sig_w);
            open(STDIN, "<&", $ir) or exit(3);
            open(STDOUT, ">&", $ow) or exit(3);
            close($ir); close($ow);
            return 0;
        }
        close($ir); close($ow);
        nonblock($iw); nonblock($or);
        return { i => $iw, o => $or, p => $p };
    };
    while (1) {
        1 while waitpid(-1, 1) > 0;
        # Only with no exec in flight and nothing to read: never in the way.
        if (!$spare && !%x) {
            my $rin = "";
            vec($rin, 0, 1) = 1;
            if (select(my $rout = $rin, undef, undef, 0) == 0) {
                my $c = $spawn->();
                return if defined($c) && !ref($c);
                $spare = $c;
            }
        }
        my ($rin, $win) = ("", "");
        vec($rin, 0, 1) = 1;
        vec($rin, fileno($sig_r), 1) = 1;
        for my $e (values %x) {
            delete $e->{new};
            vec($rin, fileno($e->{o}), 1) = 1 if $e->{c} > 0;
            vec($win, fileno($e->{i}), 1) = 1 if $e->{i} && length($e->{q});
        }
        my $n = select(my $rout = $rin, my $wout = $win, undef, undef);
        next if $n <= 0;
        sysread($sig_r, my $junk, 64) if vec($rout, fileno($sig_r), 1);
        if (vec($rout, 0, 1)) {
            my $r = sysread(STDIN, $cin, 262144, length($cin));
            next if !defined($r) && ($! == $EINTR || $! == $EAGAIN);
            exit(0) if !$r;
            while (length($cin) >= 9) {
                my ($t, $id, $l) = unpack("a N N", $cin);
                last if length($cin) < 9 + $l;
                my $d = substr($cin, 9, $l);
                substr($cin, 0, 9 + $l) = "";
                my $e = $x{$id};
                if ($t eq "N") {
                    exit(2) if $e || $l != 4;
                    # The spare if it still runs (the OOM killer may have
                    # taken it), else a child forked now. waitpid, not
                    # kill 0: a spare that just died is a zombie, which
                    # kill 0 still finds.
                    my $c = $spare;
                    $spare = undef;
                    if ($c && waitpid($c->{p}, 1) != 0) { close($c->{i}); close($c->{o}); $c = undef; }
                    if (!$c) {
                        $c = $spawn->();
                        return if defined($c) && !ref($c);
                    }
                    if (!$c) { wall("Q" . pack("NN", $id, 0)) or exit(0); next; }
                    $x{$id} = { i => $c->{i}, o => $c->{o}, q => "", c => unpack("N", $d), new => 1 };
                }
                elsif (!$e) { }
                elsif ($t eq "M") { $e->{q} .= $d if $e->{i}; }
                elsif ($t eq "G" && $l == 4) { $e->{c} += unpack("N", $d); }
                elsif ($t eq "Q") {
                    close($e->{o}); close($e->{i}) if $e->{i};
                    delete $x{$id};
                }
                else { exit(2); }
            }
        }
        for my $id (keys %x) {
            my $e = $x{$id};
            # New this round: its descriptors were not in the select.
            next if $e->{new};
            if ($e->{i} && length($e->{q}) && vec($wout, fileno($e->{i}), 1)) {
                my $w = syswrite($e->{i}, $e->{q});
                if (defined($w)) { substr($e->{q}, 0, $w) = ""; }
                elsif ($! != $EINTR && $! != $EAGAIN) {
                    close($e->{i});
                    ($e->{i}, $e->{q}) = (undef, "");
                }
            }
            next if $e->{c} <= 0 || !vec($rout, fileno($e->{o}), 1);
            my $r = sysread($e->{o}, my $d, $e->{c} < 65536 ? $e->{c} : 65536);
            if ($r) {
                $e->{c} -= $r;
                wall("M" . pack("NN", $id, $r) . $d) or exit(0);
            } elsif (defined($r) || ($! != $EINTR && $! != $EAGAIN)) {
                wall("Q" . pack("NN", $id, 0)) or exit(0);
                close($e->{o}); close($e->{i}) if $e->{i};
                delete $x{$id};
            }
        }
    }
}
mux() if @ARGV == 1 && $ARGV[0] eq "mux";
my ($O_RDWR, $O_NOCTTY, $TIOCSPTLCK, $TIOCGPTN, $TIOCSCTTY, $TIOCSWINSZ) =
    (2, 256, 0x40045431, 0x80045430, 0x540E, 0x5414);
binmode STDIN;
binmode STDOUT;
my $pid = 0;
my $ibuf = "";
sub reap_group {
    if ($pid > 0) { kill("KILL", -$pid); kill("KILL", $pid); }
    keeper_done();
}
sub put {
    my ($t, $d) = @_;
    my $m = $t . pack("N", length($d)) . $d;
    my $o = 0;
    while ($o < length($m)) {
        my $w = syswrite(STDOUT, $m, length($m) - $o, $o);
        if (!defined($w)) {
            next if $! == $EINTR;
            reap_group();
            exit(3);
        }
        $o += $w;
    }
}
sub frame {
    return () if length($ibuf) < 5;
    my ($t, $l) = unpack("a N", $ibuf);
    return () if length($ibuf) < 5 + $l;
    my $d = substr($ibuf, 5, $l);
    substr($ibuf, 0, 5 + $l) = "";
    return ($t, $d);
}
sub fill {
    my $r = sysread(STDIN, $ibuf, 262144, length($ibuf));
    return 1 if !defined($r) && ($! == $EINTR || $! == $EAGAIN);
    return defined($r) && $r > 0;
}
# The keeper: a child that outlives this helper only to kill the command's
# process group when the helper dies before the command, SIGKILL included
# (the OOM killer, or the agent's own pkill), where no handler of ours runs.
# It blocks reading a pipe whose write end only this helper holds (and the
# command's child until its exec, to pass its pid): the helper's death is
# its end of file. "d" first means the helper ended on its own: the command
# was reaped (what it left in the background stays, as always), or its
# group was already killed. It keeps nothing else open, and is named so
# that a kill of the helpers by name spares it.
pipe(my $kr, my $kw) or exit(3);
my $hpid = $$;
my $kp = fork();
exit(3) if !defined($kp);
if ($kp == 0) {
    close($kw);
    # A spare's keeper (channel mode) waits for an exec: named for it once
    # its command's pid comes.
    $0 = "agent-lane-spare";
    $SIG{PIPE} = "DEFAULT";
    open(STDIN, "<", "/dev/null") or exit(3);
    open(STDOUT, ">", "/dev/null") or exit(3);
    open(STDERR, ">", "/dev/null") or exit(3);
    my $m = "";
    while (length($m) < 256) {
        my $r = sysread($kr, $m, 64, length($m));
        $0 = "agent-lane-keeper" if $m =~ /^\d+\n/ && $0 ne "agent-lane-keeper";
        last if defined($r) && $r == 0;
        last if !defined($r) && $! != $EINTR;
    }
    if ($m =~ /^(\d+)\n(?!d)/ && $1 > 1) { kill("KILL", -$1); kill("KILL", $1); }
    exit(0);
}
close($kr);
sub keeper_done { syswrite($kw, "d") if $$ == $hpid; }
END { keeper_done() if defined($kw); }
syswrite(STDOUT, "\0ALGX01\n") == 8 or exit(3);
my ($cwd, @env, @argv, $direct, $tty) = ("");
SETUP: while (1) {
    while (my ($t, $d) = frame()) {
        if ($t eq "C") { $cwd = $d; }
        elsif ($t eq "E") { push(@env, $d); }
        elsif ($t eq "A") { push(@argv, $d); }
        elsif ($t eq "D") { $direct = 1; }
        elsif ($t eq "T" && length($d) == 4) { $tty = $d; }
        elsif ($t eq "R") { last SETUP; }
        else { exit(2); }
    }
    fill() or exit(2);
}
exit(2) if !@argv || ($direct && length($ibuf)) || ($direct && $tty);
$0 = "perl" if $0 eq "agent-lane-spare";
sub winsize {
    my ($fh, $d) = @_;
    my $ws = pack("S4", unpack("n2", $d), 0, 0);
    ioctl($fh, $TIOCSWINSZ, $ws);
}
my ($in_r, $in_w, $out_r, $out_w, $err_r, $err_w, $ptm, $pts);
if ($tty) {
    # ioctl() writes through its argument: variables, not constants.
    my ($unlock, $n) = (pack("i", 0), pack("i", 0));
    if (!sysopen($ptm, "/dev/ptmx", $O_RDWR | $O_NOCTTY)
        || !ioctl($ptm, $TIOCSPTLCK, $unlock)
        || !ioctl($ptm, $TIOCGPTN, $n)) {
        put("F", "tty\0" . ($! + 0) . "\0/dev/ptmx: $!");
        exit(0);
    }
    $pts = "/dev/pts/" . unpack("i", $n);
    winsize($ptm, $tty);
} else {
    if (!$direct) { pipe($in_r, $in_w) or exit(3); }
    pipe($out_r, $out_w) or exit(3);
    pipe($err_r, $err_w) or exit(3);
}
pipe(my $st_r, my $st_w) or exit(3);
# Copies stream through these: larger pipes, fewer wake-ups (best effort).
fcntl($_, $F_SETPIPE_SZ, 1048576) for grep { defined } ($in_w, $out_r);
# The child's exit wakes select() below through a pipe: perl runs signal
# handlers between operations, so a SIGCHLD that lands just before select()
# would otherwise be noticed only when select() times out. Installed before
# the fork: a command that exits at once (true) must not beat the handler
# (execve resets it in the child).
pipe(my $sig_r, my $sig_w) or exit(3);
for my $fh ($sig_r, $sig_w) {
    my $fl = fcntl($fh, $F_GETFL, 0);
    fcntl($fh, $F_SETFL, $fl | $O_NONBLOCK) if defined($fl);
}
$SIG{CHLD} = sub { syswrite($sig_w, "x"); };
$pid = fork();
exit(3) if !defined($pid);
if ($pid == 0) {
    # Before anything can fail: the keeper must know whom to kill. The pid
    # is the group's too (setsid or setpgrp below); exec closes $kw here.
    syswrite($kw, "$$\n");
    close($st_r);
    if ($tty) {
        # setsid and a first open without O_NOCTTY: the slave becomes
        # the controlling terminal (TIOCSCTTY says so explicitly).
        require POSIX;
        my $s;
        my $sid = POSIX::setsid();
        if (!defined($sid) || $sid < 0 || !sysopen($s, $pts, $O_RDWR)) {
            syswrite($st_w, "tty\0" . ($! + 0) . "\0$pts: $!");
            exit(126);
        }
        ioctl($s, $TIOCSCTTY, 0);
        # Whatever started us may have ignored these (a non-interactive
        # shell does for background jobs); keys typed at a terminal must
        # work on the command.
        $SIG{$_} = "DEFAULT" for qw(INT QUIT TSTP TTIN TTOU HUP TERM WINCH);
        close($ptm);
        open(STDIN, "<&", $s) or exit(127);
        open(STDOUT, ">&", $s) or exit(127);
        open(STDERR, ">&", $s) or exit(127);
        close($s);
    } else {
    setpgrp(0, 0);
    close($out_r); close($err_r);
    if (!$direct) { close($in_w); open(STDIN, "<&", $in_r) or exit(127); }
    open(STDOUT, ">&", $out_w) or exit(127);
    open(STDERR, ">&", $err_w) or exit(127);
    }
    $SIG{PIPE} = "DEFAULT";
    for my $e (@env) {
        my ($k, $v) = split(/=/, $e, 2);
        $ENV{$k} = $v;
    }
    if (length($cwd) && !chdir($cwd)) {
        syswrite($st_w, "cwd\0" . ($! + 0) . "\0$!");
        exit(126);
    }
    exec { $argv[0] } @argv;
    my $n = $! + 0;
    print STDERR "agent-lane: $argv[0]: $!\n";
    exit($n == 2 ? 127 : 126);
}
# A tty command makes its own session (and group): setpgid here could win
# the race and make setsid fail in the child.
setpgrp($pid, $pid) if !$tty;
close($st_w);
if (!$tty) {
    close($out_w); close($err_w);
    close($in_r) if !$direct;
}
my $st = "";
while (1) {
    my $r = sysread($st_r, $st, 4096, length($st));
    last if defined($r) && $r == 0;
    last if !defined($r) && $! != $EINTR;
}
close($st_r);
if (length($st)) {
    waitpid($pid, 0);
    put("F", $st);
    exit(0);
}
put("P", $pid);
# Direct: the command owns our stdin now; we only watch it run.
close(STDIN) if $direct;
# With a tty, input goes to the pty's master, which is also the output.
$in_w = $ptm if $tty;
for my $fh (grep { defined } ($direct ? () : (\*STDIN, $in_w))) {
    my $fl = fcntl($fh, $F_GETFL, 0);
    fcntl($fh, $F_SETFL, $fl | $O_NONBLOCK) if defined($fl);
}
my ($pend, $close_in, $status, $quiet, $ack, $eot) = ("", 0, undef, 0, 0, 0);
my %src = $tty ? (O => $ptm) : (O => $out_r, E => $err_r);
# Bytes leaving $pend (written, or dropped once the command's stdin is
# gone) are acknowledged, but for the ^D a tty's Z typed: the daemon never
# sent it as I. It is the last byte of $pend (no I follows Z), so it
# leaves only with the rest of $pend.
sub took {
    my ($n) = @_;
    if ($eot && $n == length($pend)) { $n--; $eot = 0; }
    $ack += $n;
}
sub input {
    while (my ($t, $d) = frame()) {
        if ($t eq "I") { if ($in_w) { $pend .= $d; } else { $ack += length($d); } }
        elsif ($t eq "Z") {
            if (!$tty) { $close_in = 1; }
            elsif ($in_w) { $pend .= "\x04"; $eot = 1; }
        }
        elsif ($t eq "W" && length($d) == 4) { winsize($ptm, $d) if $tty && $in_w; }
        else { reap_group(); exit(2); }
    }
}
input();
while (1) {
    if (!defined($status)) {
        my $w = waitpid($pid, 1);
        $status = $? if $w == $pid;
    }
    # Once the command is gone, output still held open by something it
    # left in the background is relayed only while it keeps flowing.
    last if defined($status) && (!%src || $quiet >= 2);
    if ($in_w && $close_in && !length($pend)) { close($in_w); $in_w = undef; }
    my ($rin, $win) = ("", "");
    vec($rin, 0, 1) = 1 if !$direct;
    vec($rin, fileno($_), 1) = 1 for values(%src);
    vec($rin, fileno($sig_r), 1) = 1;
    vec($win, fileno($in_w), 1) = 1 if $in_w && length($pend);
    my $n = select(my $rout = $rin, my $wout = $win, undef, 0.1);
    $quiet++ if $n == 0 && defined($status);
    next if $n <= 0;
    sysread($sig_r, my $junk, 64) if vec($rout, fileno($sig_r), 1);
    for my $k (sort keys %src) {
        next if !vec($rout, fileno($src{$k}), 1);
        my $r = sysread($src{$k}, my $d, 65536);
        if (defined($r) && $r > 0) { put($k, $d); $quiet = 0; }
        elsif (defined($r) || ($! != $EINTR && $! != $EAGAIN)) {
            # A pty's master reads EIO once the last slave is closed.
            close($src{$k}); delete($src{$k});
            if ($tty) { took(length($pend)); ($in_w, $pend) = (undef, ""); }
        }
    }
    if (vec($rout, 0, 1)) {
        if (!fill()) {
            reap_group();
            exit(0);
        }
        input();
    }
    if ($in_w && length($pend) && vec($wout, fileno($in_w), 1)) {
        my $w = syswrite($in_w, $pend);
        if (defined($w)) { took($w); substr($pend, 0, $w) = ""; }
        elsif ($! != $EINTR && $! != $EAGAIN) {
            took(length($pend));
            close($in_w) if !$tty;
            ($in_w, $pend) = (undef, "");
        }
    }
    if ($ack >= 65536 || ($ack && !length($pend))) { put("K", pack("N", $ack)); $ack = 0; }
}
$status = $? if !defined($status) && waitpid($pid, 0) == $pid;
put("X", ($status & 127) ? "s" . ($status & 127) : "c" . ($status >> 8));
exit(0);
