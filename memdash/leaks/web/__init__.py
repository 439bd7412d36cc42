"""The leaks lens's web layer: views, API, exports."""
