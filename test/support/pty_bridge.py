"""Runs a command in a pseudo-terminal, for tests that drive a program as a person would.

usage: python3 pty_bridge.py COLS ROWS COMMAND [ARG...]

The command gets a new pty as its controlling terminal (stdin, stdout and stderr), of COLS x
ROWS. What this bridge reads on stdin is typed into the terminal (keystrokes: "\\r" is Enter,
"\\x03" is Ctrl-C, "\\x04" is Ctrl-D); what the command writes comes out on stdout. The bridge
exits with the command's exit status (128 + N when a signal N ended it).
"""
import fcntl
import os
import pty
import select
import struct
import sys
import termios


def main() -> int:
    cols, rows, argv = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
    pid, master = pty.fork()
    if pid == 0:
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        os.execvp(argv[0], argv)
    typing = True
    while True:
        ready, _, _ = select.select([master] + ([0] if typing else []), [], [])
        if master in ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the command and everything on its terminal are gone
                data = b""
            if not data:
                break
            os.write(1, data)
        if 0 in ready:
            data = os.read(0, 65536)
            if data:
                os.write(master, data)
            else:
                typing = False
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


if __name__ == "__main__":
    sys.exit(main())
