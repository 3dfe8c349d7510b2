import torch

from config import TTSConfig
from decoder import TTSDecoder


class Synthesizer:
    def __init__(self, cfg: TTSConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.dec = TTSDecoder(cfg, device)
        self.dec.eval()
        if device.type == "cuda":
            self.dec.graph_postnet()
            self.step_fn = torch.compile(self.dec.decode_step, mode="reduce-overhead")
        else:
            self.step_fn = self.dec.decode_step

    @torch.no_grad()
    def synthesize(self, text: torch.Tensor, frames: int) -> dict:
        memory = self.dec.text_emb(text)
        temperature = self.cfg.temperature
        codes = []
        for _ in range(frames):
            code = self.step_fn(memory, temperature)
            codes.append(code.clone())
            temperature = temperature * self.cfg.temperature_decay
            if self.dec.finished:
                break
        mel = self.dec.mel_cache[:, : self.dec.pos]
        return {
            "frames": float(self.dec.pos),
            "mel_mean": float(mel.mean()),
            "code_sum": float(torch.cat(codes, dim=1).sum()),
        }
