"""Capturing coding-agent sessions: the event vocabulary, one adapter per agent (its hook
payloads in, its output format out), bounds, privacy filters and the LLM-free session summary.

Everything here is pure standard library: the hook client (``engram.hooks``) imports it in a
short-lived process that must start in a few tens of milliseconds.
"""
