"""Desktop front ends for the Karukan engine: D-Bus service, IBus engine, fcitx5 addon."""
