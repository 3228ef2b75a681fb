"""Inference backends behind one interface (base.InferenceBackend); see select() in server.py."""
