"""One request model per operation, shared by the REST and MCP edges.

Each operation both edges offer declares its arguments here once, with the limits of
:mod:`engram.limits` (the service's own): REST takes the model as its body (its OpenAPI schema
carries the bounds), and the MCP tool declares its (flat) parameters with the model's field
types (search and context then build the model itself and call the service with its
``options()``; extraction hands the service its model), so the two edges accept exactly the
same values. ``tests/test_request_models.py`` compares the bounds of the REST
request bodies with the MCP tools' input schemas and fails when they disagree.

- :mod:`engram.requests.fields`: the field types several operations share (an environment
  reference, filter values, a reason);
- :mod:`engram.requests.retrieval`: search and context assembly;
- :mod:`engram.requests.memories`: remembering and editing memories (episodes, procedures);
- :mod:`engram.requests.extraction`: extraction from a conversation;
- :mod:`engram.requests.handoffs`: leaving, listing and accepting a handoff;
- :mod:`engram.requests.soul`: changing a Soul block, snapshots, restoring a block.

LLM providers keep theirs beside the provider code (``extraction.providers.ProviderSettings``).
"""
