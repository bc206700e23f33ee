"""Answer now, improve later: the one channel by which a session's quick answers (live text,
suggestions, Space) are followed by better ones from the scheduler's workers, as LateUpdates
addressed to the context and the event that asked."""
