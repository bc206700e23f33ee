"""Threads and timing, apart from ranking policy: the scheduler's workers (supersession,
priorities, fairness, deadlines), the stage-timing predictor that says what fits a budget, the
greedy batcher that lets every worker share one decode, and the store of conversions prepared
while the user pauses. Nothing here knows how a candidate is ranked."""
