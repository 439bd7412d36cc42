"""Parsers of the platforms' own leak tools (pure: no Django): Xcode's `leaks` and LeakCanary."""
