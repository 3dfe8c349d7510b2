import torch

from config import TTSConfig
from synth import Synthesizer


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = TTSConfig(seed=seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    g = torch.Generator().manual_seed(seed)
    text = torch.randint(2, cfg.vocab, (cfg.batch, cfg.text_len), generator=g).to(device)
    synth = Synthesizer(cfg, device)
    return synth.synthesize(text, steps)


if __name__ == "__main__":
    print(run())
