"""An HTTP server for the engine speaking the OpenAI and Anthropic chat APIs.

    harness serve --port 8000          # or: python -m engine.server.run
    curl localhost:8000/v1/chat/completions -d '{"model": "smollm2", "messages": [...]}'

Concurrent requests are batched by the engine's scheduler; /metrics shows how.
"""

from engine.server.app import create_app
from engine.server.run import DEFAULT_NAME, serve

__all__ = ["DEFAULT_NAME", "create_app", "serve"]
