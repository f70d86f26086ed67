"""slowlab's Gunicorn config: one hook, nothing that changes how Gunicorn
serves.

The harness gives every process it starts a parent-death signal, so that a
harness killed with SIGKILL leaves nothing running. Gunicorn's master gets
it from the harness, but the signal is not inherited across fork, and an
idle worker notices that its master is gone only when its select() times
out (half of Gunicorn's --timeout: 15 s by default), listening all the
while. post_fork gives each worker its own parent-death signal, so a worker
dies with its master at once.
"""

import ctypes
import os
import signal

_PR_SET_PDEATHSIG = 1


def post_fork(server, worker):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
        err = ctypes.get_errno()
        server.log.warning("slowlab: prctl(PR_SET_PDEATHSIG) failed: %s", os.strerror(err))
    # The master may have died before prctl took effect.
    if os.getppid() != server.pid:
        os._exit(1)
