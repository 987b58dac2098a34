"""The SDK's images: the numpy -> PNG encoder for every layout and dtype (each PNG decoded again by an
independent decoder and compared pixel for pixel), encoded bytes passed through, bad images skipped
with a warning, and log_image / log_text against a real server."""
import re
import warnings

import numpy as np
import pytest

import trainwatch as tw
from harness import png_decode
from trainwatch import _image

RNG = np.random.default_rng(3)


def one_png(image, dataformats=None):
    encoded = _image.encode(image, dataformats)
    assert len(encoded) == 1
    return png_decode.decode(encoded[0])


def levels(shape):
    """Random uint8 levels, and the same as floats k / 255 (which must encode back to exactly k)."""
    k = RNG.integers(0, 256, size=shape, dtype=np.uint8)
    return k, k.astype(np.float64) / 255.0


@pytest.mark.parametrize("channels", [1, 3, 4])
def test_channels_last_uint8_and_floats(channels):
    k, f = levels((13, 7, channels))
    for dtype in (np.float16, np.float32, np.float64):  # float16 is off by < 0.2 / 255: still k
        assert np.array_equal(one_png(f.astype(dtype)), k), dtype
    assert np.array_equal(one_png(k), k)
    assert one_png(k).shape == (13, 7, channels)  # grey stays one channel, RGBA keeps alpha


def test_grey_hw_and_channels_first():
    k, f = levels((5, 9))
    assert np.array_equal(one_png(k), k[:, :, None])
    assert np.array_equal(one_png(f.astype(np.float32), "HW"), k[:, :, None])
    rgb, rgb_f = levels((3, 6, 8))  # C x H x W
    assert np.array_equal(one_png(rgb, "CHW"), np.moveaxis(rgb, 0, -1))
    assert np.array_equal(one_png(rgb_f, "chw"), np.moveaxis(rgb, 0, -1))  # any case


def test_batches_become_one_png_each():
    k, f = levels((4, 6, 5, 3))
    encoded = _image.encode(f)  # N x H x W x C by default
    assert [png_decode.decode(e).shape for e in encoded] == [(6, 5, 3)] * 4
    for i in range(4):
        assert np.array_equal(png_decode.decode(encoded[i]), k[i])
    nchw = np.ascontiguousarray(np.moveaxis(k, -1, 1))
    encoded = _image.encode(nchw, "NCHW")
    for i in range(4):
        assert np.array_equal(png_decode.decode(encoded[i]), k[i])
    grey = _image.encode(k[..., 0], "NHW")
    assert np.array_equal(png_decode.decode(grey[2]), k[2, :, :, :1])


def test_bools_integers_clipping_and_views():
    mask = RNG.random((4, 4)) > 0.5
    assert np.array_equal(one_png(mask)[:, :, 0], mask.astype(np.uint8) * 255)
    k, _ = levels((6, 6, 3))
    assert np.array_equal(one_png(k.astype(np.int64)), k)
    assert np.array_equal(one_png(k.astype(np.uint16)), k)
    odd = np.array([[-0.5, 1.7, np.nan, np.inf, -np.inf, 0.5, 0.25]])
    assert one_png(odd)[0, :, 0].tolist() == [0, 255, 0, 255, 0, 128, 64]
    big, _ = levels((20, 30, 3))
    view = big[::2, ::3]  # not contiguous
    assert np.array_equal(one_png(view), view)
    assert np.array_equal(one_png(big.transpose(1, 0, 2)), big.transpose(1, 0, 2))


def test_large_image_compresses_and_round_trips():
    y, x = np.mgrid[0:480, 0:640]
    smooth = np.stack([(x // 3) % 256, (y // 2) % 256, (x + y) % 256], axis=-1).astype(np.uint8)
    data = _image.encode(smooth)[0]
    assert len(data) < smooth.nbytes / 20  # the Up filter makes smooth images small
    assert np.array_equal(png_decode.decode(data), smooth)


def test_torch_tensors_go_through_numpy():
    import torch  # python3-torch (install-deps.sh)
    k, _ = levels((3, 5, 7))
    tensor = torch.from_numpy(k.astype(np.float32) / 255.0)
    assert np.array_equal(one_png(tensor, "CHW"), np.moveaxis(k, 0, -1))
    grad = tensor.clone().requires_grad_(True) * 1.0  # a tensor that needs detaching
    assert np.array_equal(one_png(grad, "CHW"), np.moveaxis(k, 0, -1))


def test_pil_images_are_accepted():
    pil = pytest.importorskip("PIL.Image")  # optional: not a dependency of the SDK
    k, _ = levels((5, 6, 3))
    assert np.array_equal(one_png(pil.fromarray(k)), k)
    assert np.array_equal(one_png(pil.fromarray(k[:, :, 0])), k[:, :, :1])
    palette = pil.fromarray(k).convert("P")
    assert np.array_equal(one_png(palette), np.asarray(palette.convert("RGB")))


def test_encoded_bytes_pass_through_unchanged():
    k, _ = levels((3, 3, 3))
    png = png_decode.encode_plain(k)
    gif = (b"GIF89a\x01\x00\x01\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00!\xf9\x04\x01\x00\x00\x00\x00,"
           b"\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;")
    jpeg = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + b"\x00" * 40
    webp = b"RIFF\x1a\x00\x00\x00WEBPVP8L" + b"\x00" * 14
    for data in (png, gif, jpeg, webp):
        assert _image.encode(data) == [data]
        assert _image.encode(bytearray(data)) == [data]
        assert _image.encode(memoryview(data)) == [data]
    assert [_image.encoded_format(d) for d in (png, gif, jpeg, webp, b"BM...")] == \
        ["png", "gif", "jpeg", "webp", None]


@pytest.mark.parametrize("image, dataformats, message", [
    (b"<html></html>", None, "not a PNG, JPEG, GIF or WebP"),
    (np.zeros((4, 4, 2), np.uint8), None, "1, 3 or 4 channels, got 2"),
    (np.zeros((3, 8, 8), np.float32), None, "dataformats='CHW'"),
    (np.zeros((2, 2, 2, 2, 3)), None, "2 (HW), 3 (HWC) or 4 (NHWC) dimensions"),
    (np.zeros((4, 4)), "HWC", "needs 3 dimensions"),
    (np.zeros((4, 4)), "XY", "dataformats must be one of"),
    (np.zeros((0, 4, 3)), None, "at least one pixel"),
    (np.full((2, 2), 300), None, "within 0..255, got 300..300"),
    (np.zeros((2, 2), complex), None, "pixel values must be"),
])
def test_bad_images_say_why(image, dataformats, message):
    with pytest.raises((ValueError, TypeError), match=re.escape(message)):
        _image.encode(image, dataformats)


def test_log_image_and_text_reach_the_server_and_bad_images_only_warn(server):
    run = tw.init(project="img", id="sdk-images", server=server.url, system_metrics=False)
    k, _ = levels((8, 8, 3))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run.log({"loss": 1.0}, step=4)
        run.log_image("good", k)  # the current step: 4
        run.log_image("mixed", [k, b"junk", k[:, :, :1]], step=5, caption=["first", "second", "third"])
        run.log_image("bad", np.zeros((2, 2, 7)))
        run.log_image("bad", object())
        run.log_image("bad", k, step="not a step")
        run.log_image("bad", k, step=-1)
        run.log_text("notes", "never", step=-2)
        tw.log_image("module", k, step=6, caption="module-level")
        tw.log_text("notes", "**bold** text")
        run.log_text("notes", "replaced later", step=9)
        run.log_text("notes", "final", step=9)
        run.finish()
    messages = [str(w.message) for w in caught if issubclass(w.category, tw.TrainwatchWarning)]
    assert len(messages) == 6, messages
    assert "image 'mixed' at step 5 (index 1) skipped" in messages[0]
    images = server.get_json("/api/v1/images", {"project": "img", "run": "sdk-images"})
    got = [(i["name"], i["step"], i["index"], i["caption"], i["width"], i["height"]) for i in images]
    assert got == [("good", 4, 0, "", 8, 8), ("mixed", 5, 0, "first", 8, 8), ("mixed", 5, 2, "third", 8, 8),
                   ("module", 6, 0, "module-level", 8, 8)]
    blob = server.get(images[0]["url"])
    assert blob.status == 200 and blob.body == _image.encode(k)[0]
    texts = server.get_json("/api/v1/texts", {"project": "img", "run": "sdk-images"})
    assert [(t["step"], t["value"]) for t in texts] == [(4, "**bold** text"), (9, "final")]
