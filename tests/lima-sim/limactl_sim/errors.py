"""The exceptions that end a command: Fatal (a fatal log line, exit 1), with
its kinds NotExist and ArgsError, and ExitCode (a plain exit status)."""

import os


class Fatal(Exception):
    """Ends the command with a fatal log line and exit status 1."""


class NotExist(Fatal):
    """The instance directory or its lima.yaml is missing."""

    def __init__(self, name, d, dir_exists):
        Fatal.__init__(self, 'open %s: no such file or directory'
                       % os.path.join(d, 'lima.yaml'))
        self.name = name
        self.dir = d
        self.dir_exists = dir_exists


class ArgsError(Fatal):
    """Wrong positional arguments for CMD (cobra's Args check).  The command
    table owns the usage lines, so cli adds them when it reports this."""

    def __init__(self, cmd, msg):
        Fatal.__init__(self, msg)
        self.cmd = cmd
        self.msg = msg


class ExitCode(Exception):
    def __init__(self, code):
        Exception.__init__(self, code)
        self.code = code


class GoErrors(object):
    """A Go []error as Lima prints it: TEXT is what %v shows (the messages),
    JSON what encoding/json writes, where an error marshals as its exported
    fields: {"Op","Path","Err"} for an *fs.PathError, {} for the rest."""

    def __init__(self, text, objs=None):
        self.text = list(text)
        self.json = list(objs) if objs is not None else [{} for _ in self.text]
