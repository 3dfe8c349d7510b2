def warmup_lr(step: int, cfg) -> float:
    return cfg.lr * min(1.0, (step + 1) / cfg.warmup)
