"""speechbrain: greedy seq2seq decoding, `hyps, lengths, scores, log_probs = searcher(enc, wav_len)`.

The concrete classes the labellers assumed: S2SRNNGreedySearcher over an
AttentionalRNNDecoder("lstm", "location") with an embedding and sb.nnet.linear.Linear, temperature
0; the encoder output is random (a real recipe gets it from the encoder). The searcher keeps
no state between calls (its attention caches are reset at each call), so state() is empty and
the outputs are compared.
"""
import torch

from bench.real_e2e.step_api import Built

PACKAGE = "speechbrain"
KIND = "decode"
REGION = "speechbrain/decoders/seq2seq.py::S2SGreedySearcher.forward"
# Imported by `import speechbrain`: hyperpyyaml, ruamel.yaml (+ its C part), joblib and torchaudio
# (which must match torch: 2.11.0 for the GPU image's torch 2.11; no torchaudio loads into the
# local torch 2.13 CPU venv, so this step does not run on the CPU side). sentencepiece, tqdm,
# huggingface-hub, numpy, scipy are in the GPU image. cp312 wheels:
EXTRA = [
    ("hyperpyyaml", "1.2.3", "0088c8ce97dc7c7d3460112b6ccc92dca46fade4d0320bc39f58b1fdda60f7f1"),
    ("ruamel.yaml", "0.19.1", "27592957fedf6e0b62f281e96effd28043345e0e66001f97683aa9a40c667c93"),
    ("ruamel.yaml.clib", "0.2.15", "11e5499db1ccbc7f4b41f0565e4f799d863ea720e01d3e99fa0b7b5fcd7802c9"),
    ("joblib", "1.6.0", "3dbbf9f6e4b592a2357b854608e980fe6390d131d7a82f011a377ef2ebef7aba"),
    ("torchaudio", "2.11.0", "6503c0bdb29daf2e6281bb70ea2dfe2c3553b782b619eb5d73bdadd8a3f7cecf"),
]

VOCAB, EMB, HIDDEN, ENC_DIM, FRAMES, BATCH = 64, 32, 64, 48, 40, 4


def build(device: str, seed: int) -> Built:
    from speechbrain.decoders import S2SRNNGreedySearcher
    from speechbrain.nnet.linear import Linear
    from speechbrain.nnet.RNN import AttentionalRNNDecoder

    torch.manual_seed(seed)
    decoder = AttentionalRNNDecoder("lstm", "location", HIDDEN, HIDDEN, 1, enc_dim=ENC_DIM, input_size=EMB,
                                    channels=8, kernel_size=5)
    searcher = S2SRNNGreedySearcher(
        embedding=torch.nn.Embedding(VOCAB, EMB), decoder=decoder,
        linear=Linear(n_neurons=VOCAB, input_size=HIDDEN),
        bos_index=0, eos_index=1, min_decode_ratio=0.0, max_decode_ratio=1.0,
    ).to(device).eval()

    def inputs(i: int) -> tuple:
        gen = torch.Generator().manual_seed(seed * 1_000_003 + i)
        return (torch.randn(BATCH, FRAMES, ENC_DIM, generator=gen).to(device),
                torch.ones(BATCH, device=device))

    @torch.no_grad()
    def step(enc_states, wav_len):
        return searcher(enc_states, wav_len)

    return Built(step=step, inputs=inputs, state=lambda: {})
