"""Worldloom's neural world model: a state-anchored frame autoencoder and a block-causal latent transformer.

A causal autoregressive generator in the line of GameNGen, DIAMOND and Oasis (next frame from past frames and
the action), anchored to the explicit world state as PixVerse R2 anchors its world: every frame, the geometric
sketch of the simulator's state (`inference.world.conditioning`) is rasterised into image planes that the
autoencoder's decoder and the transformer both read. Geometry therefore cannot drift, and the latent only
carries what the sketch lacks (texture detail, particles, stars, lighting as seen).

- `geometry_planes`: per-column sketch, frame scalars and active events -> (B, PLANES, H, W), no parameters.
- `FrameAutoencoder`: 64x64 frame + planes -> 4x4x32 latent (tanh-bounded) -> frame; the decoder renders
  from the planes (among them the renderer's flat-shaded frame, `_flat_render`) at full resolution and takes
  texture and detail from the latent through a small low-resolution path.
- `DynamicsTransformer`: one block of 16 tokens per frame (the 4x4 latent grid), block-causal attention over
  the last `window` frames (nanoGPT's blocks, with a rolling KV cache at inference); each token reads the
  previous latent, the sketch of the 16 columns under it, the frame scalars, the held keys and the events,
  and regresses the next latent directly.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from torch import nn

from inference.world import conditioning as features
from inference.world.events import TIME_OF_DAY_KINDS, WEATHER_KINDS
from inference.world.renderer import CONFIG as RENDER_CONFIG
from inference.world.renderer import (
    LIGHTING,
    OVERLAY_PARTICLE,
    OVERLAY_STAR,
    SEAM_WIDTH,
    SPRITE_KINDS,
    SPRITES,
    TILE_COLUMNS,
    TILE_ROWS,
    TILE_STAGGER,
)

CHECKPOINT_NAME = "world_model.safetensors"  # beside it, world_model.json: the config and the metrics
DEFAULT_CHECKPOINT = Path(__file__).resolve().parent / "checkpoints" / CHECKPOINT_NAME

SPRITE_HEIGHTS = tuple(SPRITES[kind][2] for kind in SPRITE_KINDS)
WALL_PLANES, FLOOR_PLANES, SKY_PLANES, SPRITE_PLANES = 13, 8, 7, 13
EVENT_PLANES = sum(features.EVENT_SLOTS)
_WEATHER_START = WALL_PLANES + FLOOR_PLANES + SKY_PLANES + SPRITE_PLANES + features.EVENT_SLOTS[0]
WEATHER_PLANES = slice(_WEATHER_START, _WEATHER_START + features.EVENT_SLOTS[1])  # the weather's one-hot planes
OVERLAY_PLANES = 2  # stars (already hidden behind walls and billboards), particles
LIGHT_PLANES = 2  # the renderer's distance falloff and fog amount at the depth of whatever each pixel shows
ALBEDO_PLANES = 3  # the renderer's lit and fogged frame without texture or detail (`_flat_render`)
PLANES = (
    WALL_PLANES
    + FLOOR_PLANES
    + SKY_PLANES
    + SPRITE_PLANES
    + EVENT_PLANES
    + OVERLAY_PLANES
    + LIGHT_PLANES
    + ALBEDO_PLANES
)
PARTICLE_PLANE = PLANES - ALBEDO_PLANES - LIGHT_PLANES - 1
ALBEDO = slice(PLANES - ALBEDO_PLANES, PLANES)


@dataclass(frozen=True)
class WorldModelConfig:
    """Sizes of the world model; the defaults are the shipped model, tests use much smaller ones."""

    frame_size: int = 64  # the renderer's teacher resolution; the player upscales it
    # 16-pixel cells: a 4x4 grid of 32 channels, 512 numbers a frame as an 8x8x8 latent has, but 16 tokens a
    # frame instead of 64, and the transformer's step grows with the tokens it attends over.
    patch: int = 16
    latent_channels: int = 32
    autoencoder_width: int = 32  # encoder channels at 32x32, doubled below; the decoder's stages halve from 2x this
    plane_width: int = 16  # the planes are projected to this many channels before each low-resolution stage
    # The decoder's full-resolution path: the 64x64 planes (never pooled there, so seams, grout, stars and
    # particles stay one pixel sharp) and the upsampled latent features, through `detail_blocks` separable
    # residual blocks `detail_width` wide. A block's cost at every pixel grows with the square of its width
    # (`SeparableResidual`), so the width stays narrow.
    detail_width: int = 16
    detail_blocks: int = 2
    # 128 wide, 4 layers of 4 heads (32 dimensions each): 0.8M parameters, small enough that one core steps
    # a batch of sessions at the frame rate.
    model_dim: int = 128
    heads: int = 4
    layers: int = 4
    window: int = 8  # frames of context: enough to see particles move and walls slide, small enough to stay fast

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


def geometry_planes(
    columns: torch.Tensor, scalars: torch.Tensor, events: torch.Tensor, overlay: torch.Tensor, height: int
) -> torch.Tensor:
    """Rasterise the conditioning into (B, PLANES, H, W) image planes, exactly as the renderer lays out geometry.

    columns (B, W, COLUMN_FEATURES), scalars (B, SCALAR_FEATURES), events (B, 3), overlay (B, H, W). Beside the
    geometry, the planes hold the renderer's tile seams and floor grout (functions of the texture coordinates
    that a small network would only learn blurred) and each pixel's flat colour (`ALBEDO`), which the decoder
    shades.
    """
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
    kind = column(features.COLUMN_TEXTURE_KIND)  # (B, 4, 1, W) one-hot

    def per_kind(values: object) -> torch.Tensor:  # (B, 1, W): a renderer's per-texture constant, per column
        table = torch.tensor(values, device=columns.device, dtype=columns.dtype).view(1, -1, 1, 1)
        return (kind * table).sum(dim=1)

    tile_rows, tile_columns, seam_width = per_kind(TILE_ROWS), per_kind(TILE_COLUMNS), per_kind(SEAM_WIDTH)
    course = torch.floor(v * tile_rows)  # (B, H, W): which row of tiles, as `renderer._wall_texture` counts
    across = column(features.COLUMN_TEXTURE_U) * tile_columns + per_kind(TILE_STAGGER) * course
    seam = (torch.frac(across) < seam_width * tile_columns) | (v * tile_rows - course < seam_width * tile_rows)
    wall_planes.append(seam.to(columns.dtype) * wall)
    wall_stack = torch.cat(
        [
            torch.stack(wall_planes, dim=1),  # (B, 6, H, W)
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
            ((torch.frac(floor_x) < 0.05) | (torch.frac(floor_y) < 0.05)).to(columns.dtype) * floor,  # grout
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

    overlay_planes = torch.stack(
        [
            (overlay == OVERLAY_STAR).to(columns.dtype) * sky * (1 - sprite),
            (overlay == OVERLAY_PARTICLE).to(columns.dtype),
        ],
        dim=1,
    )  # (B, 2, H, W)
    # Depth of what each pixel shows (the sky counts as 6 cells, as the renderer's fog has it) -> light and fog.
    pixel_depth = torch.where(
        sprite > 0,
        1 / sprite_inverse_depth.clamp_min(1e-3),
        wall / inverse_depth.clamp_min(1e-3) + floor * distance + sky * 6.0,
    )  # (B, H, W)
    light_planes = torch.stack(
        [
            1 / (1 + RENDER_CONFIG.distance_falloff * pixel_depth),
            1 - torch.exp(-RENDER_CONFIG.fog_density * pixel_depth),
        ],
        dim=1,
    )  # (B, 2, H, W)
    albedo = _flat_render(
        column(features.COLUMN_WALL_COLOR)
        * (1 - (1 - RENDER_CONFIG.side_shade) * column(features.COLUMN_SIDE).unsqueeze(1)),
        scalars,
        events,
        (wall, floor, sky, sprite),
        column(features.COLUMN_SPRITE_COLOR),
        elevation,
        light_planes,
    )
    return torch.cat(
        [
            wall_stack,
            floor_planes,
            floor_color,
            sky_planes,
            sky_color,
            sprite_planes,
            event_planes,
            overlay_planes,
            light_planes,
            albedo,
        ],
        dim=1,
    )


def _flat_render(
    wall_color: torch.Tensor,
    scalars: torch.Tensor,
    events: torch.Tensor,
    masks: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor],
    sprite_color: torch.Tensor,
    elevation: torch.Tensor,
    light_planes: torch.Tensor,
) -> torch.Tensor:
    """(B, 3, H, W): the renderer's frame without textures, discs, stars, shapes or particles, in 0..1.

    The renderer's own lighting (`renderer.LIGHTING`: light, tint, sky gradient, fog colour per time of day),
    weather tints, side shading, distance falloff and fog, applied to the sketch's colours: what a decoder
    would otherwise spend most of its capacity multiplying out. It learns the rest as a gain and an offset.
    wall_color and sprite_color (B, 3, 1, W) per column; masks (B, H, W) each; elevation (1, H, 1).
    """
    wall, floor, sky, sprite = masks
    time_of_day, weather, fog = events[:, 0], events[:, 1], events[:, 2]  # (B,) each
    device, dtype = scalars.device, scalars.dtype

    def table(values: list) -> torch.Tensor:  # a per-time-of-day constant for each session: (B, ...)
        return torch.tensor(values, device=device, dtype=dtype)[time_of_day]

    lighting = [LIGHTING[kind] for kind in TIME_OF_DAY_KINDS]
    rain, snow = (weather == WEATHER_KINDS.index("rain")), (weather == WEATHER_KINDS.index("snow"))
    light = table([entry.light for entry in lighting]) * torch.where(rain, 0.8, 1.0)  # (B,)
    light = (light[:, None] * table([entry.tint for entry in lighting]))[:, :, None, None]  # (B, 3, 1, 1)
    lit = light * light_planes[:, 0:1]  # (B, 3, H, W): light reaching the eye at each pixel's depth

    sky_color = scalars[:, features.SCALAR_SKY_COLOR]  # (B, 3) in 0..1
    has_own = table([entry.sky_top is not None for entry in lighting]).bool()[:, None]  # (B, 1)
    top = torch.where(has_own, table([entry.sky_top or (0, 0, 0) for entry in lighting]) / 255, sky_color * 0.75)
    horizon = torch.where(
        has_own, table([entry.sky_horizon or (0, 0, 0) for entry in lighting]) / 255, sky_color * 0.5 + 127 / 255
    )
    blend = (elevation / 0.6).clamp(0, 1)  # (1, H, 1)
    gradient = horizon[:, :, None, None] * (1 - blend) + top[:, :, None, None] * blend  # (B, 3, H, 1)
    gradient = torch.where(rain[:, None, None, None], gradient * 0.45 + 115 / 255 * 0.55, gradient)
    gradient = torch.where(snow[:, None, None, None], gradient * 0.5 + 205 / 255 * 0.5, gradient)

    floor_color = scalars[:, features.SCALAR_FLOOR_COLOR]  # (B, 3)
    floor_color = torch.where(snow[:, None], floor_color * 0.25 + 235 / 255 * 0.75, floor_color)
    image = (
        wall_color * wall.unsqueeze(1) * lit
        + floor_color[:, :, None, None] * floor.unsqueeze(1) * lit
        + gradient * sky.unsqueeze(1)
    )
    image = torch.where(sprite.unsqueeze(1) > 0, sprite_color * lit, image)
    fog_color = table([entry.fog for entry in lighting])[:, :, None, None] / 255  # (B, 3, 1, 1)
    amount = light_planes[:, 1:2] * fog[:, None, None, None].to(dtype)  # (B, 1, H, W)
    return image * (1 - amount) + fog_color * amount


def _convolution(channels_in: int, channels_out: int, kernel: int, stride: int) -> nn.Sequential:
    # Normalised, so that the frame's signal survives the stack at initialisation (plain convolutions
    # shrink it layer after layer, and the planes alone then train a decoder that ignores the latent).
    return nn.Sequential(
        nn.Conv2d(
            channels_in,
            channels_out,
            kernel,
            stride=stride,
            padding=(kernel - 1) // 2 if stride == 1 else (kernel - stride) // 2,
        ),
        nn.GroupNorm(min(8, channels_out // 2), channels_out),
        nn.GELU(),
    )


class SeparableResidual(nn.Module):
    """x + pointwise(GELU(depthwise 3x3(x))): a full-resolution block at C * (C + 9) multiply-adds a pixel."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.depthwise = nn.Conv2d(channels, channels, 3, padding=1, groups=channels)
        self.pointwise = nn.Conv2d(channels, channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.pointwise(F.gelu(self.depthwise(x)))


class FrameAutoencoder(nn.Module):
    """Frames to small latents and back, both ways reading the geometry planes.

    The decoder renders from the planes and takes detail from the latent: a low-resolution path turns the 8x8
    latent (with pooled planes) into features at 16x16; at 64x64 the full planes and those features go
    through a few separable residual blocks to a per-pixel gain and offset that shade the sketch's flat
    colour (`ALBEDO`: light, tint, texture and fog multiply a colour, which a small network only adds well).
    Snow and rain particles are composited last in a learned colour per weather, as the renderer draws them.
    """

    def __init__(self, config: WorldModelConfig) -> None:
        super().__init__()
        width = config.autoencoder_width
        halvings = int(math.log2(config.patch))  # 64 -> grid
        # 2x2 patches first: a 3x3 convolution over 64x64 pixels and all the planes would dominate a training step.
        encoder = [_convolution(3 + PLANES, width, 2, stride=2)]
        encoder += [_convolution(width if index == 0 else 2 * width, 2 * width, 4, 2) for index in range(halvings - 1)]
        self.encoder = nn.Sequential(*encoder, nn.Conv2d(2 * width, config.latent_channels, 1))
        # Low-resolution stages from the grid up to a quarter of the frame (16x16), each reading the planes
        # average-pooled to its size; a 32x32 stage would cost as much as the whole full-resolution path and add
        # nothing the planes lack.
        # Widths halve as the size doubles, so every stage costs about the same: 2w at the grid, w/2 at 16x16.
        stage_widths = [(config.latent_channels, 2 * width)]
        while len(stage_widths) < halvings - 1:
            stage_widths.append((stage_widths[-1][1], stage_widths[-1][1] // 2))
        self.plane_projections = nn.ModuleList(nn.Conv2d(PLANES, config.plane_width, 1) for _ in stage_widths)
        self.stages = nn.ModuleList(
            _convolution(channels_in + config.plane_width, channels_out, 3, stride=1)
            for channels_in, channels_out in stage_widths
        )
        # The features reach full resolution already projected to the detail width, and the planes are projected
        # apart: two 1x1 convolutions summed instead of one over a concatenation that copies 64x64 planes.
        self.features_in = nn.Conv2d(stage_widths[-1][1], config.detail_width, 1)
        self.planes_in = nn.Conv2d(PLANES, config.detail_width, 1)
        self.details = nn.Sequential(*(SeparableResidual(config.detail_width) for _ in range(config.detail_blocks)))
        self.to_shading = nn.Conv2d(config.detail_width, 6, 1)  # gain and offset per colour channel
        self.particle_colors = nn.Embedding(len(WEATHER_KINDS), 3)
        nn.init.constant_(self.particle_colors.weight, 0.9)  # both particles are near white

    def encode(self, frames: torch.Tensor, planes: torch.Tensor) -> torch.Tensor:
        """(B, 3, H, W) frames in 0..1 and their planes -> (B, C, H/patch, W/patch) latents in -1..1."""
        return torch.tanh(self.encoder(torch.cat([frames, planes], dim=1)))

    def decode(self, latents: torch.Tensor, planes: torch.Tensor) -> torch.Tensor:
        """(B, C, g, g) latents and (B, PLANES, H, W) planes -> (B, 3, H, W) frames, about 0..1."""
        pooled = F.avg_pool2d(planes, 4)  # (B, PLANES, H/4, W/4): the last stage's size
        scales = [pooled]
        while scales[0].shape[-1] > latents.shape[-1]:
            scales.insert(0, F.avg_pool2d(scales[0], 2))
        x = latents
        for index, (projection, stage) in enumerate(zip(self.plane_projections, self.stages, strict=True)):
            if index:
                x = F.interpolate(x, scale_factor=2, mode="nearest")
            x = stage(torch.cat([x, projection(scales[index])], dim=1))
        x = F.interpolate(self.features_in(x), size=planes.shape[-2:], mode="bilinear", align_corners=False)
        x = self.details(x + self.planes_in(planes))  # (B, detail_width, H, W)
        gain, offset = self.to_shading(x).chunk(2, dim=1)  # (B, 3, H, W) each
        image = (1 + gain) * planes[:, ALBEDO] + offset
        particles = planes[:, PARTICLE_PLANE : PARTICLE_PLANE + 1]  # (B, 1, H, W)
        weather = planes[:, WEATHER_PLANES, 0, 0].argmax(dim=1)  # (B,): the event planes are constant
        return image * (1 - particles) + particles * self.particle_colors(weather)[:, :, None, None]


class KeyValueCache:
    """Keys and values of the last frames per layer: the rolling memory of a batch of sessions.

    Sessions of different ages share a batch: `lengths` counts each row's real tokens, which sit at the end of
    its rows; the rest is padding that attention masks out. `stack` and `split` move between one cache per
    session (what the engine keeps) and one cache per batch (what a forward pass reads).
    """

    def __init__(self, layers: int, window_tokens: int, lengths: list[int] | None = None) -> None:
        self.window_tokens = window_tokens
        self.keys: list[torch.Tensor | None] = [None] * layers
        self.values: list[torch.Tensor | None] = [None] * layers
        self.lengths = lengths  # None: every row holds the same number of tokens (no padding)
        self._pending_lengths: list[int] | None = None

    def extend(
        self, layer: int, keys: torch.Tensor, values: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """Append this frame's (B, heads, N, head_dim) keys and values.

        Returns the keys and values to attend over and, when rows are padded, a (B, 1, 1, tokens) mask.
        """
        B, _, N, _ = keys.shape  # batch, heads, new tokens, head dimensions
        previous_keys, previous_values = self.keys[layer], self.values[layer]
        mask = None
        if previous_keys is not None and previous_values is not None:
            if self.lengths is not None and min(self.lengths) < previous_keys.shape[2]:
                held = previous_keys.shape[2]
                lengths = torch.tensor(self.lengths, device=keys.device).view(B, 1)
                mask = torch.arange(held + N, device=keys.device).view(1, -1) >= held - lengths  # (B, held + N)
                mask = mask.view(B, 1, 1, held + N)
            keys = torch.cat([previous_keys, keys], dim=2)
            values = torch.cat([previous_values, values], dim=2)
        # The newest frame stays; the oldest falls out once the window is full.
        self.keys[layer], self.values[layer] = keys[:, :, -self.window_tokens :], values[:, :, -self.window_tokens :]
        if self.lengths is not None and layer == len(self.keys) - 1:
            self.lengths = [min(length + N, self.window_tokens) for length in self.lengths]
        return keys, values, mask

    @classmethod
    def stack(cls, caches: list[KeyValueCache]) -> KeyValueCache:
        """One cache for a batch of one-session caches, rows left-padded with zeros to the longest."""
        first = caches[0]
        lengths = [0 if cache.keys[0] is None else cache.keys[0].shape[2] for cache in caches]
        stacked = cls(len(first.keys), first.window_tokens, lengths)
        longest = max(lengths)
        if longest == 0:
            return stacked
        for layer in range(len(first.keys)):
            for name in ("keys", "values"):
                rows = []
                for cache, length in zip(caches, lengths, strict=True):
                    row = getattr(cache, name)[layer]
                    if row is None:  # a new session: all padding, shaped like a row that has tokens
                        reference = next(c for c in caches if c.keys[0] is not None)
                        row = getattr(reference, name)[layer][:, :, :0]
                    if length < longest:
                        row = F.pad(row, (0, 0, longest - length, 0))
                    rows.append(row)
                getattr(stacked, name)[layer] = torch.cat(rows)  # (B, heads, longest, head_dim)
        return stacked

    def split(self) -> list[KeyValueCache]:
        """One cache per row, each holding only its real tokens."""
        assert self.lengths is not None, "only a stacked cache knows where each row's padding ends"
        caches = []
        for row, length in enumerate(self.lengths):
            cache = KeyValueCache(len(self.keys), self.window_tokens)
            for layer in range(len(self.keys)):
                keys, values = self.keys[layer], self.values[layer]
                assert keys is not None and values is not None
                cache.keys[layer] = keys[row : row + 1, :, keys.shape[2] - length :]
                cache.values[layer] = values[row : row + 1, :, values.shape[2] - length :]
            caches.append(cache)
        return caches


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
            # The window (previous frames, then this one) ends with this frame: its queries may see every real key.
            key, value, mask = cache.extend(layer, key, value)
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

    def planes(
        self, columns: torch.Tensor, scalars: torch.Tensor, events: torch.Tensor, overlay: torch.Tensor
    ) -> torch.Tensor:
        return geometry_planes(columns, scalars, events, overlay, self.config.frame_size)


def save_world_model(model: WorldModel, path: Path, metrics: dict | None = None) -> None:
    """Write the weights to `path` (safetensors) and the config and metrics beside it (`path` with .json).

    safetensors holds tensors only and loads without unpickling; the JSON keeps the config readable in review.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    weights = {name: tensor.detach().cpu().contiguous() for name, tensor in model.state_dict().items()}
    save_file(weights, str(path))
    card = {"config": asdict(model.config), "metrics": metrics or {}}
    path.with_suffix(".json").write_text(json.dumps(card, indent=2) + "\n")


def load_world_model(path: Path, device: str = "cpu") -> WorldModel:
    """The model `save_world_model` wrote to `path`, rebuilt from its JSON config, in eval mode."""
    card = json.loads(path.with_suffix(".json").read_text())
    model = WorldModel(WorldModelConfig(**card["config"]))
    model.load_state_dict(load_file(str(path), device="cpu"))
    return model.to(device).eval()
