"""Images for `Run.log_image`: arrays encoded as PNG (the standard library's zlib and numpy; no
imaging library needed), and images that are already encoded, recognised by their signature.

Arrays are channels-last by default: H x W (grey), H x W x C, and N x H x W x C for N images, with
C = 1 (grey), 3 (RGB) or 4 (RGBA). `dataformats` names another layout ("CHW", "NCHW", ...). Values:
uint8 as they are; floats in [0, 1], scaled by 255 and rounded (outside values clipped, NaN as 0);
bool as 0 or 255; other integers when every value is within 0..255.
"""
import struct
import zlib

import numpy as np

# Encoded images the server accepts, by their first bytes.
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_LAYOUTS = ("HW", "HWC", "CHW", "NHW", "NHWC", "NCHW")
_DEFAULT_LAYOUT = {2: "HW", 3: "HWC", 4: "NHWC"}
_COLOUR_TYPE = {1: 0, 3: 2, 4: 6}  # channels -> PNG colour type (grey, RGB, RGBA)
_ZLIB_LEVEL = 6


def encoded_format(data):
    """"png", "jpeg", "gif" or "webp" for encoded image bytes; None for anything else."""
    if data.startswith(_PNG_SIGNATURE):
        return "png"
    if data.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "gif"
    if len(data) >= 12 and data.startswith(b"RIFF") and data[8:12] == b"WEBP":
        return "webp"
    return None


def encode(image, dataformats=None):
    """The encoded images in `image`, as a list of bytes (one for an image, N for a batch of N).

    `image`: encoded bytes (bytes, bytearray, memoryview), a numpy array, a torch tensor, a PIL
    image or anything numpy.asarray accepts. Raises ValueError (or TypeError) saying what is wrong.
    """
    if isinstance(image, (bytes, bytearray, memoryview)):
        data = bytes(image)
        if encoded_format(data) is None:
            raise ValueError("the bytes are not a PNG, JPEG, GIF or WebP image (they start with %r)"
                             % data[:8])
        return [data]
    array = _to_array(image)
    layout = _layout(array, dataformats)
    if layout.startswith("N"):
        return [png(_to_hwc(frame, layout[1:])) for frame in array]
    return [png(_to_hwc(array, layout))]


def png(pixels):
    """PNG bytes of an H x W x C uint8 array (C = 1, 3 or 4).

    Every row uses the "Up" filter (the byte-wise difference from the row above): one vectorised
    subtraction that lets zlib compress smooth images far better than raw rows."""
    height, width, channels = pixels.shape
    rows = np.ascontiguousarray(pixels).reshape(height, width * channels)
    above = np.zeros_like(rows)
    above[1:] = rows[:-1]
    filtered = np.empty((height, 1 + width * channels), dtype=np.uint8)
    filtered[:, 0] = 2  # filter type: Up
    filtered[:, 1:] = rows - above  # uint8 arithmetic: modulo 256, as PNG defines it
    header = struct.pack(">IIBBBBB", width, height, 8, _COLOUR_TYPE[channels], 0, 0, 0)
    return b"".join((_PNG_SIGNATURE, _chunk(b"IHDR", header),
                     _chunk(b"IDAT", zlib.compress(filtered.tobytes(), _ZLIB_LEVEL)),
                     _chunk(b"IEND", b"")))


def _chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _to_array(image):
    module = type(image).__module__.split(".")[0]
    if module == "torch":
        return image.detach().cpu().numpy()
    if module == "PIL":
        # Palette, 16-bit, CMYK, ... modes become the grey/RGB/RGBA they show as.
        if image.mode not in ("L", "RGB", "RGBA"):
            image = image.convert("RGBA" if "A" in image.mode or "transparency" in image.info else "RGB")
        return np.asarray(image)
    return np.asarray(image)


def _layout(array, dataformats):
    if dataformats is None:
        layout = _DEFAULT_LAYOUT.get(array.ndim)
        if layout is None:
            raise ValueError("an image array has 2 (HW), 3 (HWC) or 4 (NHWC) dimensions, got shape %s"
                             % (array.shape,))
        return layout
    layout = str(dataformats).upper()
    if layout not in _LAYOUTS:
        raise ValueError("dataformats must be one of %s, got %r" % (", ".join(_LAYOUTS), dataformats))
    if len(layout) != array.ndim:
        raise ValueError("dataformats %r needs %d dimensions, got shape %s"
                         % (layout, len(layout), array.shape))
    return layout


def _to_hwc(array, layout):
    """One image in `layout` (HW, HWC or CHW) as an H x W x C uint8 array."""
    if layout == "HW":
        array = array[:, :, np.newaxis]
    elif layout == "CHW":
        array = np.moveaxis(array, 0, -1)
    height, width, channels = array.shape
    if channels not in _COLOUR_TYPE:
        hint = " (a channels-first array needs dataformats='CHW')" if array.shape[0] in _COLOUR_TYPE else ""
        raise ValueError("an image has 1, 3 or 4 channels, got %d in shape %s%s"
                         % (channels, array.shape, hint))
    if height == 0 or width == 0:
        raise ValueError("an image needs at least one pixel, got shape %s" % (array.shape,))
    return _to_uint8(array)


def _to_uint8(array):
    kind = array.dtype.kind
    if array.dtype == np.uint8:
        return array
    if kind == "b":
        return array.astype(np.uint8) * 255
    if kind == "f":
        scaled = np.rint(np.clip(np.nan_to_num(array.astype(np.float64), nan=0.0), 0.0, 1.0) * 255.0)
        return scaled.astype(np.uint8)
    if kind in "iu":
        if array.size and (array.min() < 0 or array.max() > 255):
            raise ValueError("integer pixel values must be within 0..255, got %d..%d (scale them, or "
                             "pass floats in [0, 1])" % (array.min(), array.max()))
        return array.astype(np.uint8)
    raise ValueError("pixel values must be uint8, bool, integers or floats, got %s" % array.dtype)
