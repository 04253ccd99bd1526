"""Kafka API names by key, as Kafka's ``ApiKeys`` spells them (CamelCase), for logs and audit lines."""

from __future__ import annotations

from functools import cache

from kio.schema.index import api_key_map


@cache
def api_name(api_key: int) -> str:
    snake = api_key_map.get(api_key)
    if snake is None:
        return f"Unknown{api_key}"
    return "".join(part.capitalize() for part in snake.split("_"))
