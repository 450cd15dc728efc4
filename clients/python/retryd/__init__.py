"""retryd: drive the retryd daemon (pi RPC protocol over pipes) from Python.

    import retryd
    with retryd.Client(args=["--no-session"]) as client:
        result = client.prompt_and_wait("hello", timeout=60)
        print(result.text if result.success else result.error)

Client is synchronous (threads), AsyncClient the same calls for asyncio.
Standard library only; Python 3.8 or later. See README.md.
"""
from ._common import (CommandError, DaemonExited, DaemonNotFound, LineSplitter, Result,
                      RetrydError, Timeout, find_daemon, message_text)
from .aio import AsyncClient
from .client import Client

__version__ = "0.1.0"

__all__ = ["AsyncClient", "Client", "CommandError", "DaemonExited", "DaemonNotFound",
           "LineSplitter", "Result", "RetrydError", "Timeout", "find_daemon", "message_text",
           "__version__"]
