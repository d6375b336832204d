"""Train the world model on frames our own renderer makes: `python -m inference.world.train --output DIR`.

Three phases, as the open world models train: the autoencoder on single frames; the dynamics transformer
teacher-forced on sequences with Gaussian noise on the context latents (GameNGen, DIAMOND, Oasis), so that it
learns to correct an imperfect past rather than copy it; and a last phase on its own outputs (Self-Forcing),
where the context is the model's previous predictions. Prediction is direct regression of the next latent.
Everything comes from `--seed`: the worlds, the data order and the weights. Writes `world_model.safetensors`
and `world_model.json` (the model's config, and its metrics: held-out PSNRs beside the copy-last-frame and
average-frame baselines, the command line, the training time) to `--output`.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

from inference.world.dataset import CONFIG as DATASET_CONFIG
from inference.world.dataset import Episodes, episodes
from inference.world.model import CHECKPOINT_NAME, WorldModel, WorldModelConfig, save_world_model

TINY_MODEL = WorldModelConfig(
    autoencoder_width=8, plane_width=4, detail_width=8, detail_blocks=1, model_dim=32, heads=2, layers=1, window=4
)
MODELS = {"default": WorldModelConfig(), "tiny": TINY_MODEL}


@dataclass(frozen=True)
class TrainConfig:
    """A training run; the defaults are a short CPU run that beats the baselines, not the shipped model."""

    seed: int = 0
    model: str = "default"
    episodes: int = 256  # ~8k frames: enough variety of worlds and events for a model this small
    held_out_episodes: int = 16
    episode_length: int = 32  # frames; the dynamics sees `sequence_frames + 1` of them at a time
    autoencoder_steps: int = 3000
    dynamics_steps: int = 3000
    self_forcing_steps: int = 1000
    batch_size: int = 16
    sequence_frames: int = 8  # the default model's window: training sees the context inference will
    learning_rate: float = 2e-3  # AdamW with cosine decay; small models tolerate a high rate
    edge_weight: float = 0.5  # weight of the image-difference term of the autoencoder's L1 loss
    context_noise: float = 0.2  # largest std of the noise added to context latents (latents lie in -1..1)
    self_forcing_passes: int = 2  # own-output passes per step: how many frames of its own error it learns to fix
    threads: int = 1  # one core per process: oversubscribed threads are several times slower
    device: str = "auto"


def frames_tensor(frames: np.ndarray, device: torch.device) -> torch.Tensor:
    """(..., H, W, 3) uint8 -> (..., 3, H, W) float in 0..1."""
    return torch.from_numpy(frames).to(device).movedim(-1, -3).float() / 255


def psnr(prediction: torch.Tensor, target: torch.Tensor) -> float:
    """Peak signal-to-noise ratio in dB of images in 0..1, over the whole tensor."""
    mean_squared_error = F.mse_loss(prediction.clamp(0, 1), target).item()
    return 10 * math.log10(1 / max(mean_squared_error, 1e-10))


def reconstruction_loss(prediction: torch.Tensor, target: torch.Tensor, edge_weight: float) -> torch.Tensor:
    """L1 plus L1 of the horizontal and vertical differences, on (B, 3, H, W) images.

    L1 keeps edges where mean squared error blurs them (the median, not the mean, of what a latent cannot
    tell apart); the difference term asks for the seams and silhouettes to be as sharp as the renderer's.
    """
    loss = F.l1_loss(prediction, target)
    for dim in (-1, -2):
        loss = loss + edge_weight * F.l1_loss(prediction.diff(dim=dim), target.diff(dim=dim))
    return loss


class Trainer:
    """Holds the model, the data on the device, and the random generator every phase draws from."""

    def __init__(self, model: WorldModel, data: Episodes, config: TrainConfig, device: torch.device) -> None:
        self.model, self.config, self.device = model.to(device), config, device
        self.frames = torch.from_numpy(data.frames)  # (E, L, H, W, 3) uint8, kept small on the host
        self.columns = torch.from_numpy(data.columns).to(device)  # (E, L, W, F)
        self.scalars = torch.from_numpy(data.scalars).to(device)  # (E, L, S)
        self.events = torch.from_numpy(data.events).to(device)  # (E, L, 3)
        self.overlay = torch.from_numpy(data.overlay).to(device)  # (E, L, H, W) uint8
        self.generator = torch.Generator().manual_seed(config.seed)
        self.latents: torch.Tensor | None = None

    def planes(self, episode: torch.Tensor, tick: torch.Tensor) -> torch.Tensor:
        """Planes of the frames at (episode, tick) index pairs: (N, PLANES, H, W)."""
        return self.model.planes(
            self.columns[episode, tick],
            self.scalars[episode, tick],
            self.events[episode, tick],
            self.overlay[episode, tick],
        )

    def frame_batch(self, episode: torch.Tensor, tick: torch.Tensor) -> torch.Tensor:
        return frames_tensor(self.frames[episode, tick].numpy(), self.device)

    def _optimizer(self, parameters: list[torch.nn.Parameter], steps: int) -> tuple:
        optimizer = torch.optim.AdamW(parameters, lr=self.config.learning_rate, weight_decay=0.01)
        schedule = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda index: 0.5 * (1 + math.cos(math.pi * min(index / max(steps, 1), 1.0)))
        )
        return optimizer, schedule

    def train_autoencoder(self, steps: int) -> list[float]:
        """Reconstruct random single frames; returns the loss of each step."""
        autoencoder = self.model.autoencoder
        optimizer, schedule = self._optimizer(list(autoencoder.parameters()), steps)
        count, length = self.frames.shape[:2]
        losses = []
        for _ in tqdm(range(steps), desc="autoencoder", disable=steps == 0):
            episode = torch.randint(count, (self.config.batch_size,), generator=self.generator)
            tick = torch.randint(length, (self.config.batch_size,), generator=self.generator)
            planes, frames = self.planes(episode, tick), self.frame_batch(episode, tick)
            loss = reconstruction_loss(
                autoencoder.decode(autoencoder.encode(frames, planes), planes), frames, self.config.edge_weight
            )
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            schedule.step()
            losses.append(loss.item())
        return losses

    @torch.no_grad()
    def encode_all(self) -> None:
        """Encode every frame once; the dynamics phases train on these latents."""
        count, length = self.frames.shape[:2]
        latents = []
        for episode in range(count):
            ticks = torch.arange(length)
            episodes_index = torch.full((length,), episode)
            latents.append(
                self.model.autoencoder.encode(
                    self.frame_batch(episodes_index, ticks), self.planes(episodes_index, ticks)
                )
            )
        self.latents = torch.stack(latents)  # (E, L, C, g, g)

    def _sequences(self) -> tuple[torch.Tensor, ...]:
        """A batch of windows: latents before each frame, the frames' latents, and their conditioning."""
        assert self.latents is not None
        count, length = self.latents.shape[:2]
        frames = self.config.sequence_frames
        episode = torch.randint(count, (self.config.batch_size, 1), generator=self.generator)
        start = torch.randint(length - frames, (self.config.batch_size, 1), generator=self.generator)
        ticks = start + torch.arange(frames + 1)  # (B, T + 1)
        episode = episode.expand_as(ticks)
        latents = self.latents[episode, ticks]  # (B, T + 1, C, g, g)
        target_episode, target_ticks = episode[:, 1:], ticks[:, 1:]
        return (
            latents[:, :-1],
            latents[:, 1:],
            self.columns[target_episode, target_ticks],
            self.scalars[target_episode, target_ticks],
            self.events[target_episode, target_ticks],
        )

    def train_dynamics(self, steps: int, self_forcing: bool) -> list[float]:
        """Teacher-forced with noisy context, or (self_forcing) on the model's own previous predictions."""
        dynamics = self.model.dynamics
        optimizer, schedule = self._optimizer(list(dynamics.parameters()), steps)
        losses = []
        phase = "self-forcing" if self_forcing else "dynamics"
        for _ in tqdm(range(steps), desc=phase, disable=steps == 0):
            previous, target, columns, scalars, events = self._sequences()
            if self_forcing:
                with torch.no_grad():
                    for _ in range(self.config.self_forcing_passes):
                        predicted = dynamics(previous, columns, scalars, events)
                        previous = torch.cat([previous[:, :1], predicted[:, :-1]], dim=1)
            noise_level = (
                torch.rand(previous.shape[0], 1, 1, 1, 1, generator=self.generator) * self.config.context_noise
            )
            noise = torch.randn(previous.shape, generator=self.generator) * noise_level
            loss = F.mse_loss(dynamics(previous + noise.to(self.device), columns, scalars, events), target)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            schedule.step()
            losses.append(loss.item())
        return losses


@torch.no_grad()
def evaluate(model: WorldModel, held_out: Episodes, mean_frame: torch.Tensor, device: torch.device) -> dict[str, float]:
    """Held-out PSNRs of the model beside the copy-last-frame and average-frame baselines."""
    model.eval()
    count, length = held_out.frames.shape[:2]
    sums = {
        "autoencoder": 0.0,
        "one_step": 0.0,
        "copy_last": 0.0,
        "mean_frame": 0.0,
        "rollout": 0.0,
        "rollout_last": 0.0,
    }
    for episode in range(count):
        frames = frames_tensor(held_out.frames[episode], device)  # (L, 3, H, W)
        columns = torch.from_numpy(held_out.columns[episode]).to(device)
        scalars = torch.from_numpy(held_out.scalars[episode]).to(device)
        events = torch.from_numpy(held_out.events[episode]).to(device)
        planes = model.planes(columns, scalars, events, torch.from_numpy(held_out.overlay[episode]).to(device))
        latents = model.autoencoder.encode(frames, planes)  # (L, C, g, g)
        sums["autoencoder"] += psnr(model.autoencoder.decode(latents, planes), frames)
        predicted = model.dynamics(latents[None, :-1], columns[None, 1:], scalars[None, 1:], events[None, 1:])[0]
        sums["one_step"] += psnr(model.autoencoder.decode(predicted, planes[1:]), frames[1:])
        sums["copy_last"] += psnr(frames[:-1], frames[1:])
        sums["mean_frame"] += psnr(mean_frame.expand_as(frames[1:]), frames[1:])
        cache = model.dynamics.new_cache()
        latent, rollout = latents[:1], []
        for tick in range(1, length):
            latent = model.dynamics.step(
                latent, columns[tick : tick + 1], scalars[tick : tick + 1], events[tick : tick + 1], cache
            )
            rollout.append(model.autoencoder.decode(latent, planes[tick : tick + 1]))
        sums["rollout"] += psnr(torch.cat(rollout), frames[1:])
        sums["rollout_last"] += psnr(rollout[-1], frames[-1:])
    model.train()
    return {
        "ae_psnr_db": sums["autoencoder"] / count,
        "one_step_psnr_db": sums["one_step"] / count,
        "copy_last_psnr_db": sums["copy_last"] / count,
        "mean_frame_psnr_db": sums["mean_frame"] / count,
        f"rollout{length - 1}_psnr_db": sums["rollout"] / count,
        f"rollout{length - 1}_last_frame_psnr_db": sums["rollout_last"] / count,
    }


def train(config: TrainConfig, output: Path, command: str) -> dict:
    """Run every phase, evaluate on held-out worlds, write the checkpoint and metrics; returns the metrics."""
    torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)
    device = torch.device(
        ("cuda" if torch.cuda.is_available() else "cpu") if config.device == "auto" else config.device
    )
    model_config = MODELS[config.model]
    started = time.perf_counter()
    # Training worlds depend on the run's seed; held-out worlds are the same for every run, so runs compare.
    first_seed = config.seed * config.episodes
    if first_seed + config.episodes > DATASET_CONFIG.held_out_seed_offset:
        raise ValueError("seed * episodes reaches into the held-out worlds; use a smaller seed")
    training_seeds = range(first_seed, first_seed + config.episodes)
    data = episodes(training_seeds, config.episode_length, model_config.frame_size, late_starts=True)
    held_out_seeds = range(
        DATASET_CONFIG.held_out_seed_offset, DATASET_CONFIG.held_out_seed_offset + config.held_out_episodes
    )
    held_out = episodes(held_out_seeds, config.episode_length, model_config.frame_size)
    data_seconds = time.perf_counter() - started
    trainer = Trainer(WorldModel(model_config), data, config, device)
    # Each phase leaves a checkpoint behind, so that a run stopped early still has its finished phases.
    losses = {"autoencoder": trainer.train_autoencoder(config.autoencoder_steps)}
    save_world_model(trainer.model, output / CHECKPOINT_NAME, {"command": command, "finished_phase": "autoencoder"})
    trainer.encode_all()
    losses["dynamics"] = trainer.train_dynamics(config.dynamics_steps, self_forcing=False)
    save_world_model(trainer.model, output / CHECKPOINT_NAME, {"command": command, "finished_phase": "dynamics"})
    losses["self_forcing"] = trainer.train_dynamics(config.self_forcing_steps, self_forcing=True)
    mean_frame = torch.from_numpy(data.frames.mean(axis=(0, 1), dtype=np.float32) / 255).movedim(-1, 0).to(device)
    metrics = evaluate(trainer.model, held_out, mean_frame, device)
    report = {
        "command": command,
        "train_config": asdict(config),
        "parameters": sum(parameter.numel() for parameter in trainer.model.parameters()),
        "device": str(device),
        "data_seconds": round(data_seconds, 1),
        "training_seconds": round(time.perf_counter() - started - data_seconds, 1),
        "final_losses": {phase: float(np.mean(values[-50:])) if values else None for phase, values in losses.items()},
        **{name: round(value, 2) for name, value in metrics.items()},
    }
    save_world_model(trainer.model, output / CHECKPOINT_NAME, report)
    return report


def parse_arguments(arguments: Sequence[str]) -> tuple[TrainConfig, Path]:
    parser = argparse.ArgumentParser(prog="python -m inference.world.train", description=__doc__.split("\n")[0])
    parser.add_argument("--output", type=Path, required=True, help="folder for world_model.safetensors and .json")
    defaults = TrainConfig()
    for name, value in asdict(defaults).items():
        choices = sorted(MODELS) if name == "model" else None
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value, choices=choices)
    namespace = vars(parser.parse_args(arguments))
    output = namespace.pop("output")
    return TrainConfig(**namespace), output


def main(arguments: Sequence[str] | None = None) -> None:
    arguments = list(sys.argv[1:] if arguments is None else arguments)
    config, output = parse_arguments(arguments)
    report = train(config, output, shlex.join(["python", "-m", "inference.world.train", *arguments]))
    print(json.dumps({key: value for key, value in report.items() if key.endswith("_db")}, indent=2))


if __name__ == "__main__":
    main()
