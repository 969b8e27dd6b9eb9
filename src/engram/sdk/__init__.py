"""The Python SDK: ``Client`` and ``AsyncClient`` for a running ``engram serve``.

from engram.sdk import Client
from engram import NewMemory

with Client() as c:  # URL and token from ENGRAM_URL / ENGRAM_TOKEN or <home>/token
    c.facts.add(NewMemory(content="Deploys go through staging first"))
"""

from engram.sdk._retry import Retry
from engram.sdk.client import DEFAULT_URL, AsyncClient, Client

__all__ = ["DEFAULT_URL", "AsyncClient", "Client", "Retry"]
