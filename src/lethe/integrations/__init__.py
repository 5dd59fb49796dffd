"""lethe where agents already reach memory: each module is a door, with its own optional extra.

* :mod:`lethe.integrations.langgraph`: :class:`~lethe.integrations.langgraph.LetheStore`, a
  LangGraph ``BaseStore`` (``pip install 'lethe-decay[langgraph]'``).
* :mod:`lethe.integrations.mcp`: an MCP memory server, ``lethe mcp``
  (``pip install 'lethe-decay[mcp]'``).

Nothing here is imported by ``import lethe``: the core keeps no dependencies.
"""
