class StepDecay:
    def __init__(self, base_lr: float, drop_every: int, gamma: float = 0.1):
        self.base_lr = base_lr
        self.drop_every = drop_every
        self.gamma = gamma

    def value(self, it: int) -> float:
        return self.base_lr * self.gamma ** (it // self.drop_every)
