"""stable-baselines3: one DQN update, `model.train(gradient_steps=1, batch_size=64)`.

A DQN with the default MlpPolicy on CartPole-v1, its replay buffer filled with seeded random
transitions (the env is only used for its spaces). `train` takes no per-step data: each call
samples a fresh minibatch from the buffer with numpy's global generator (seeded in build),
which is what changes from step to step.
"""

from bench.real_e2e.step_api import Built

PACKAGE = "stable-baselines3"
KIND = "train"
REGION = "stable_baselines3/dqn/dqn.py::DQN.train"
# gymnasium and its dependency farama-notifications are not in the GPU image; cloudpickle and
# numpy are. The CPU side needs (CPU_DEPS) numpy and cloudpickle 3.1.3
# (1654f4f18e416447210a63c5c25a135d65a292156aa5fa519dfa4baf7726dddb).
EXTRA = [
    ("gymnasium", "1.4.0", "1cb947c59e7c72d8eabb2c2274c00cd20948e69f8452a9ef4092223be24fdf0e"),
    ("farama-notifications", "0.0.6", "f84839188efa1ce5bb361c2a84881b2dc2c0d0d7fb661ff00421820170930935"),
]

BUFFER, BATCH = 1_000, 64

def build(device: str, seed: int) -> Built:
    import gymnasium as gym
    import numpy as np
    from stable_baselines3 import DQN
    from stable_baselines3.common.logger import Logger

    env = gym.make("CartPole-v1")
    model = DQN("MlpPolicy", env, buffer_size=BUFFER, learning_starts=0, seed=seed, device=device,
                policy_kwargs={"net_arch": [64, 64]})
    model.set_logger(Logger(folder=None, output_formats=[]))  # learn() would set one up
    rng = np.random.default_rng(seed)
    for _ in range(BUFFER):
        obs = rng.standard_normal((1, 4)).astype(np.float32)
        next_obs = obs + 0.1 * rng.standard_normal((1, 4)).astype(np.float32)
        model.replay_buffer.add(obs, next_obs, rng.integers(0, 2, (1, 1)), rng.standard_normal(1),
                                rng.random(1) < 0.05, [{}])

    def step():
        model.train(gradient_steps=1, batch_size=BATCH)

    def state() -> dict:
        return {f"policy.{k}": v for k, v in model.policy.state_dict().items()}

    return Built(step=step, inputs=lambda i: (), state=state)
