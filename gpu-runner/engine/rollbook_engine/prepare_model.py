"""`python -m rollbook_engine.prepare_model [name]`: make sure a model's weights are ready to load offline.

For the default SmolLM2-135M-Instruct this converts the bundled GGUF once into the cache dir
(${ROLLBOOK_MODEL_CACHE:-~/.cache/rollbook/models}); the setup script calls it so the engine starts fast.
"""

from __future__ import annotations

import argparse
import logging
import sys

from .model_loader import DEFAULT_MODEL, ensure_local


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rollbook_engine.prepare_model")
    parser.add_argument("name", nargs="?", default=DEFAULT_MODEL, help="model name, local path or HF id")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    print(ensure_local(args.name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
