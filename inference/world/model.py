"""Worldloom's neural world model: a state-anchored frame autoencoder and a block-causal latent transformer.

A causal autoregressive generator in the line of GameNGen, DIAMOND and Oasis (next frame from past frames and
the action), anchored to the explicit world state as PixVerse R2 anchors its world: every frame, the geometric
sketch of the simulator's state (`inference.world.conditioning`) is rasterised into image planes that the
autoencoder's decoder and the transformer both read. Geometry therefore cannot drift, and the latent only
carries what the sketch lacks (texture detail, particles, stars, lighting as seen).

- `geometry_planes`: per-column sketch, frame scalars and active events -> (B, PLANES, H, W), no parameters.
- `FrameAutoencoder`: 64x64 frame + planes -> 8x8 latent (tanh-bounded) -> frame, decoder fed the planes at
  every scale (a U-Net-like conditioning path, without skip connections from the encoder).
- `DynamicsTransformer`: one block of 64 tokens per frame (the 8x8 latent grid), block-causal attention over
  the last `window` frames (nanoGPT's blocks, with a rolling KV cache at inference); each token reads the
  previous latent, the sketch of the 8 columns under it, the frame scalars, the held keys and the events,
  and regresses the next latent directly.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from inference.world import conditioning as features
from inference.world.renderer import CONFIG as RENDER_CONFIG
from inference.world.renderer import SPRITE_KINDS, SPRITES

SPRITE_HEIGHTS = tuple(SPRITES[kind][2] for kind in SPRITE_KINDS)
WALL_PLANES, FLOOR_PLANES, SKY_PLANES, SPRITE_PLANES = 12, 7, 7, 13
EVENT_PLANES = sum(features.EVENT_SLOTS)
PLANES = WALL_PLANES + FLOOR_PLANES + SKY_PLANES + SPRITE_PLANES + EVENT_PLANES


@dataclass(frozen=True)
class WorldModelConfig:
    """Sizes of the world model; the defaults are the shipped model, tests use much smaller ones."""

    frame_size: int = 64  # the renderer's teacher resolution; the player upscales it
    latent_channels: int = 8  # 8x8x8 = 512 numbers per frame: the planes carry the geometry, not the latent
    autoencoder_width: int = 32  # channels at 32x32; doubled at 16x16 and 8x8, halved at 64x64
    plane_width: int = 16  # the planes are projected to this many channels before each decoder stage
    # 128 wide, 4 layers of 4 heads (32 dimensions each): 0.8M parameters, ~4 ms a step for one session on one
    # core (measured), which leaves the decoder most of a 60 fps frame.
    model_dim: int = 128
    heads: int = 4
    layers: int = 4
    window: int = 8  # frames of context: enough to see particles move and walls slide, small enough to stay fast
    patch: int = 8  # pixels per latent cell side: 64x64 frames give an 8x8 latent and 64 tokens per frame

    def __post_init__(self) -> None:
        if self.window < 2:
            raise ValueError("window must hold at least the previous frame and the current one")
        if self.frame_size % self.patch or self.model_dim % self.heads:
            raise ValueError("frame_size must divide by patch, and model_dim by heads")

    @property
    def grid(self) -> int:
        return self.frame_size // self.patch

    @property
    def tokens_per_frame(self) -> int:
        return self.grid * self.grid


def geometry_planes(columns: torch.Tensor, scalars: torch.Tensor, events: torch.Tensor, height: int) -> torch.Tensor:
    """Rasterise the conditioning into (B, PLANES, H, W) image planes, exactly as the renderer lays out geometry."""
    B, W, _ = columns.shape  # batch, screen columns, column features
    tan_half = math.tan(math.radians(RENDER_CONFIG.field_of_view_degrees) / 2)
    focal = W / 2 / tan_half  # pixels, the same both ways
    eye = RENDER_CONFIG.eye_height
    horizon = height / 2
    rows = (torch.arange(height, device=columns.device, dtype=columns.dtype) + 0.5).view(1, height, 1)  # (1, H, 1)

    def column(index: int | slice) -> torch.Tensor:
        # (B, 1, W) for one feature, (B, K, 1, W) for a slice of K features
        value = columns[..., index]
        return value.unsqueeze(1) if value.dim() == 2 else value.permute(0, 2, 1).unsqueeze(2)

    inverse_depth = column(features.COLUMN_INVERSE_DEPTH)  # (B, 1, W)
    wall_height = focal * inverse_depth
    v = (rows - (horizon - wall_height * (1 - eye))) / wall_height.clamp_min(1e-6)  # (B, H, W)
    wall = ((v >= 0) & (v < 1)).to(columns.dtype)  # (B, H, W)
    wall_planes = [
        wall,
        v * wall,
        column(features.COLUMN_TEXTURE_U) * wall,
        column(features.COLUMN_SIDE) * wall,
        inverse_depth / features.CONFIG.max_inverse_depth * wall,
    ]
    wall_stack = torch.cat(
        [
            torch.stack(wall_planes, dim=1),  # (B, 5, H, W)
            column(features.COLUMN_TEXTURE_KIND) * wall.unsqueeze(1),  # (B, 4, H, W)
            column(features.COLUMN_WALL_COLOR) * wall.unsqueeze(1),  # (B, 3, H, W)
        ],
        dim=1,
    )

    cosine, sine = scalars[:, 2:3, None], scalars[:, 3:4, None]  # (B, 1, 1)
    camera_x = (2 * (torch.arange(W, device=columns.device, dtype=columns.dtype) + 0.5) / W - 1).view(1, 1, W)
    direction_x = cosine - sine * tan_half * camera_x  # (B, 1, W)
    direction_y = sine + cosine * tan_half * camera_x
    floor = (rows >= horizon).to(columns.dtype) * (1 - wall)  # (B, H, W)
    distance = eye * focal / (rows - horizon).clamp_min(0.5)  # (1, H, 1)
    floor_x = scalars[:, 0:1, None] + distance * direction_x  # (B, H, W)
    floor_y = scalars[:, 1:2, None] + distance * direction_y
    floor_planes = torch.stack(
        [
            floor,
            torch.frac(floor_x) * floor,
            torch.frac(floor_y) * floor,
            floor / (1 + RENDER_CONFIG.distance_falloff * distance),
        ],
        dim=1,
    )
    floor_color = scalars[:, features.SCALAR_FLOOR_COLOR, None, None] * floor.unsqueeze(1)  # (B, 3, H, W)

    sky = (rows < horizon).to(columns.dtype) * (1 - wall)  # (B, H, W)
    elevation = torch.atan((horizon - rows) / focal)  # (1, H, 1) radians
    azimuth = torch.atan2(sine, cosine) + torch.atan(camera_x * tan_half)  # (B, 1, W)
    sky_planes = torch.stack([sky, elevation * sky, torch.cos(azimuth) * sky, torch.sin(azimuth) * sky], dim=1)
    sky_color = scalars[:, features.SCALAR_SKY_COLOR, None, None] * sky.unsqueeze(1)

    sprite_kind = column(features.COLUMN_SPRITE_KIND)  # (B, 6, 1, W)
    heights = torch.tensor(SPRITE_HEIGHTS, device=columns.device, dtype=columns.dtype).view(1, -1, 1, 1)
    sprite_inverse_depth = column(features.COLUMN_SPRITE_INVERSE_DEPTH)  # (B, 1, W)
    sprite_height = focal * sprite_inverse_depth * (sprite_kind * heights).sum(dim=1)  # (B, 1, W) pixels
    sprite_bottom = horizon + focal * eye * sprite_inverse_depth
    sprite_v = (rows - (sprite_bottom - sprite_height)) / sprite_height.clamp_min(1e-6)  # (B, H, W)
    sprite = ((sprite_v >= 0) & (sprite_v < 1) & (sprite_inverse_depth > 0)).to(columns.dtype)
    sprite_planes = torch.cat(
        [
            torch.stack(
                [
                    sprite,
                    column(features.COLUMN_SPRITE_U) * sprite,
                    sprite_v * sprite,
                    sprite_inverse_depth / features.CONFIG.max_inverse_depth * sprite,
                ],
                dim=1,
            ),
            sprite_kind * sprite.unsqueeze(1),
            column(features.COLUMN_SPRITE_COLOR) * sprite.unsqueeze(1),
        ],
        dim=1,
    )

    event_one_hot = torch.cat(
        [F.one_hot(events[:, slot], count) for slot, count in enumerate(features.EVENT_SLOTS)], dim=1
    ).to(columns.dtype)  # (B, EVENT_PLANES)
    event_planes = event_one_hot[:, :, None, None].expand(B, EVENT_PLANES, height, W)
    return torch.cat([wall_stack, floor_planes, floor_color, sky_planes, sky_color, sprite_planes, event_planes], dim=1)


def _convolution(channels_in: int, channels_out: int, kernel: int, stride: int) -> nn.Sequential:
    # Normalised, so that the frame's signal survives the stack at initialisation (plain convolutions
    # shrink it tenfold over four layers, and the planes alone then train a decoder that ignores the latent).
    return nn.Sequential(
        nn.Conv2d(channels_in, channels_out, kernel, stride=stride, padding=(kernel - 1) // 2 if stride == 1 else 1),
        nn.GroupNorm(min(8, channels_out // 2), channels_out),
        nn.GELU(),
    )


class FrameAutoencoder(nn.Module):
    """Frames to small latents and back, both ways reading the geometry planes."""

    def __init__(self, config: WorldModelConfig) -> None:
        super().__init__()
        width = config.autoencoder_width
        self.encoder = nn.Sequential(
            _convolution(3 + PLANES, width, 3, stride=1),
            _convolution(width, width, 4, stride=2),  # 32x32
            _convolution(width, 2 * width, 4, stride=2),  # 16x16
            _convolution(2 * width, 2 * width, 4, stride=2),  # 8x8
            nn.Conv2d(2 * width, config.latent_channels, 1),
        )
        # Decoder stages at 8, 16, 32 and 64 pixels: channels in, channels out.
        stage_widths = [(config.latent_channels, 2 * width), (2 * width, 2 * width), (2 * width, width)]
        stage_widths.append((width, width // 2))
        self.plane_projections = nn.ModuleList(nn.Conv2d(PLANES, config.plane_width, 1) for _ in stage_widths)
        self.stages = nn.ModuleList(
            nn.Sequential(
                _convolution(channels_in + config.plane_width, channels_out, 3, stride=1),
                _convolution(channels_out, channels_out, 3, stride=1),
            )
            for channels_in, channels_out in stage_widths
        )
        self.to_rgb = nn.Conv2d(width // 2, 3, 1)

    def encode(self, frames: torch.Tensor, planes: torch.Tensor) -> torch.Tensor:
        """(B, 3, H, W) frames in 0..1 and their planes -> (B, C, H/8, W/8) latents in -1..1."""
        return torch.tanh(self.encoder(torch.cat([frames, planes], dim=1)))

    def decode(self, latents: torch.Tensor, planes: torch.Tensor) -> torch.Tensor:
        """(B, C, h, w) latents and (B, PLANES, 8h, 8w) planes -> (B, 3, 8h, 8w) frames, about 0..1."""
        x = latents
        for index, (projection, stage) in enumerate(zip(self.plane_projections, self.stages, strict=True)):
            if index:
                x = F.interpolate(x, scale_factor=2, mode="nearest")
            scaled_planes = F.adaptive_avg_pool2d(planes, x.shape[-2:])
            x = stage(torch.cat([x, projection(scaled_planes)], dim=1))
        return self.to_rgb(x)


class KeyValueCache:
    """Keys and values of the last frames per layer: the rolling memory of a batch of sessions."""

    def __init__(self, layers: int, window_tokens: int) -> None:
        self.window_tokens = window_tokens
        self.keys: list[torch.Tensor | None] = [None] * layers
        self.values: list[torch.Tensor | None] = [None] * layers

    def extend(self, layer: int, keys: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Append this frame's (B, heads, N, head_dim) keys and values; returns the window to attend over."""
        previous_keys, previous_values = self.keys[layer], self.values[layer]
        if previous_keys is not None and previous_values is not None:
            keys = torch.cat([previous_keys, keys], dim=2)
            values = torch.cat([previous_values, values], dim=2)
        # The newest frame stays; the oldest falls out once the window is full.
        self.keys[layer], self.values[layer] = keys[:, :, -self.window_tokens :], values[:, :, -self.window_tokens :]
        return keys, values


class CausalSelfAttention(nn.Module):
    """Multi-head attention, full within a frame and causal across frames (nanoGPT's, with a frame mask)."""

    def __init__(self, config: WorldModelConfig) -> None:
        super().__init__()
        self.heads = config.heads
        self.qkv = nn.Linear(config.model_dim, 3 * config.model_dim)
        self.projection = nn.Linear(config.model_dim, config.model_dim)

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None, cache: KeyValueCache | None, layer: int
    ) -> torch.Tensor:
        B, T, C = x.shape  # batch, tokens, channels
        query, key, value = self.qkv(x).split(C, dim=2)
        query, key, value = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (query, key, value))
        if cache is not None:
            # The window (previous frames, then this one) ends with this frame: its queries may see every key.
            key, value = cache.extend(layer, key, value)
        y = F.scaled_dot_product_attention(query, key, value, attn_mask=mask)  # (B, heads, T, head_dim)
        return self.projection(y.transpose(1, 2).reshape(B, T, C))


class Block(nn.Module):
    """A pre-norm transformer block (nanoGPT's `Block`)."""

    def __init__(self, config: WorldModelConfig) -> None:
        super().__init__()
        self.attention_norm = nn.LayerNorm(config.model_dim)
        self.attention = CausalSelfAttention(config)
        self.mlp_norm = nn.LayerNorm(config.model_dim)
        self.mlp = nn.Sequential(
            nn.Linear(config.model_dim, 4 * config.model_dim),
            nn.GELU(),
            nn.Linear(4 * config.model_dim, config.model_dim),
        )

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None, cache: KeyValueCache | None, layer: int
    ) -> torch.Tensor:
        x = x + self.attention(self.attention_norm(x), mask, cache, layer)
        return x + self.mlp(self.mlp_norm(x))


class DynamicsTransformer(nn.Module):
    """Next latent from the previous latents, the current sketch, the held keys and the active events."""

    def __init__(self, config: WorldModelConfig) -> None:
        super().__init__()
        self.config = config
        columns_per_token = config.frame_size // config.grid
        self.latent_in = nn.Linear(config.latent_channels, config.model_dim)
        self.columns_in = nn.Linear(columns_per_token * features.COLUMN_FEATURES, config.model_dim)
        self.scalars_in = nn.Linear(features.SCALAR_FEATURES, config.model_dim)
        # The event embedding: one learned vector per value of each slot (time of day, weather, fog).
        self.events_in = nn.ModuleList(nn.Embedding(count, config.model_dim) for count in features.EVENT_SLOTS)
        self.position = nn.Parameter(torch.zeros(1, config.tokens_per_frame, config.model_dim))
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.layers))
        self.norm = nn.LayerNorm(config.model_dim)
        self.latent_out = nn.Linear(config.model_dim, config.latent_channels)
        nn.init.normal_(self.position, std=0.02)
        # Start as "the next latent is the previous one": the copy baseline is where learning begins.
        nn.init.zeros_(self.latent_out.weight)
        nn.init.zeros_(self.latent_out.bias)

    def tokens(
        self, previous: torch.Tensor, columns: torch.Tensor, scalars: torch.Tensor, events: torch.Tensor
    ) -> torch.Tensor:
        """(B, C, g, g) previous latents and one frame's conditioning -> (B, g*g, model_dim) input tokens."""
        B, _, g, _ = previous.shape  # batch, latent channels, grid
        latent_tokens = self.latent_in(previous.flatten(2).transpose(1, 2))  # (B, g*g, D)
        column_groups = self.columns_in(columns.reshape(B, g, -1))  # (B, g, D): the columns under each grid column
        x = latent_tokens + column_groups.repeat(1, g, 1) + self.position  # token (row, column) -> row * g + column
        frame = self.scalars_in(scalars) + sum(
            embedding(events[:, slot]) for slot, embedding in enumerate(self.events_in)
        )  # (B, D)
        return x + frame.unsqueeze(1)

    def frame_mask(self, frames: int, device: torch.device) -> torch.Tensor:
        """(frames*N, frames*N) boolean: a token sees its own frame and the `window - 1` frames before it."""
        frame_of_token = torch.arange(frames, device=device).repeat_interleave(self.config.tokens_per_frame)
        age = frame_of_token[:, None] - frame_of_token[None, :]
        return (age >= 0) & (age < self.config.window)

    def forward(
        self, previous: torch.Tensor, columns: torch.Tensor, scalars: torch.Tensor, events: torch.Tensor
    ) -> torch.Tensor:
        """Teacher-forced training pass over T frames at once.

        previous (B, T, C, g, g): the latent before each frame; columns (B, T, W, F), scalars (B, T, S) and
        events (B, T, 3): each frame's conditioning. Returns (B, T, C, g, g) predicted latents.
        """
        B, T, C, g, _ = previous.shape  # batch, frames, latent channels, grid
        x = self.tokens(
            previous.flatten(0, 1), columns.flatten(0, 1), scalars.flatten(0, 1), events.flatten(0, 1)
        ).view(B, T * g * g, -1)
        mask = self.frame_mask(T, previous.device)
        for layer, block in enumerate(self.blocks):
            x = block(x, mask, None, layer)
        delta = self.latent_out(self.norm(x)).view(B, T, g, g, C).permute(0, 1, 4, 2, 3)
        return previous + delta

    def step(
        self,
        previous: torch.Tensor,
        columns: torch.Tensor,
        scalars: torch.Tensor,
        events: torch.Tensor,
        cache: KeyValueCache,
    ) -> torch.Tensor:
        """One frame for a batch of sessions, attending over `cache`: (B, C, g, g) -> (B, C, g, g)."""
        B, C, g, _ = previous.shape  # batch, latent channels, grid
        x = self.tokens(previous, columns, scalars, events)
        for layer, block in enumerate(self.blocks):
            x = block(x, None, cache, layer)
        return previous + self.latent_out(self.norm(x)).view(B, g, g, C).permute(0, 3, 1, 2)

    def new_cache(self) -> KeyValueCache:
        # The cache keeps the frames before the current one; with the current frame, `window` frames in all.
        return KeyValueCache(self.config.layers, (self.config.window - 1) * self.config.tokens_per_frame)


class WorldModel(nn.Module):
    """The autoencoder and the dynamics transformer, with the helpers the engine and the trainer share."""

    def __init__(self, config: WorldModelConfig) -> None:
        super().__init__()
        self.config = config
        self.autoencoder = FrameAutoencoder(config)
        self.dynamics = DynamicsTransformer(config)

    def planes(self, columns: torch.Tensor, scalars: torch.Tensor, events: torch.Tensor) -> torch.Tensor:
        return geometry_planes(columns, scalars, events, self.config.frame_size)


def save_world_model(model: WorldModel, path: Path) -> None:
    """Write the model's config and weights to one file."""
    torch.save({"config": asdict(model.config), "state_dict": model.state_dict()}, path)


def load_world_model(path: Path, device: str = "cpu") -> WorldModel:
    """A model written by `save_world_model`, in eval mode; only tensors and plain values are unpickled."""
    checkpoint = torch.load(path, map_location=device, weights_only=True)
    model = WorldModel(WorldModelConfig(**checkpoint["config"]))
    model.load_state_dict(checkpoint["state_dict"])
    return model.to(device).eval()
