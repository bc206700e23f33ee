"""The IBus engine: the IBus engine D-Bus protocol spoken directly (no GObject, no libibus)."""
