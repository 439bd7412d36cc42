"""Writes of the leaks lens: state changes, each a function."""
