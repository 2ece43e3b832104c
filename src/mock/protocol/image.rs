//! The image parts of a request, whatever its API: chat `{type: image_url, image_url:
//! {url}}`, Responses `{type: input_image, image_url}`, Messages `{type: image, source:
//! {type: base64, media_type, data}}`, anywhere in its message list. The mock charges
//! each image by its tiles: 512 × 512 pixels, a part counted whole, read from a PNG's
//! header; an image whose size it cannot read (another format, a URL) is one tile.

use base64::Engine;
use serde_json::Value;

use crate::workload::image::png_size;

/// A tile's side in pixels.
pub const TILE_SIDE: u32 = 512;
/// Prompt tokens one tile adds to the usage.
pub const TOKENS_PER_TILE: u32 = 256;

/// The tiles of every image part under `v`.
pub fn tiles(v: &Value) -> u32 {
    match v {
        Value::Array(items) => items.iter().map(tiles).fold(0, u32::saturating_add),
        Value::Object(o) => match (
            o.get("type").and_then(Value::as_str),
            o.get("image_url"),
            o.get("source"),
        ) {
            (Some("image_url"), Some(u), _) => url_tiles(u.get("url").and_then(Value::as_str)),
            (Some("input_image"), Some(u), _) => url_tiles(u.as_str()),
            (Some("image"), _, Some(src)) => base64_tiles(src.get("data").and_then(Value::as_str)),
            _ => o.values().map(tiles).fold(0, u32::saturating_add),
        },
        _ => 0,
    }
}

fn url_tiles(url: Option<&str>) -> u32 {
    base64_tiles(
        url.and_then(|u| u.strip_prefix("data:")?.split_once(";base64,"))
            .map(|(_, d)| d),
    )
}

/// The tiles of a base64 image: its PNG header's size, else one tile.
fn base64_tiles(data: Option<&str>) -> u32 {
    // 32 base64 characters are the first 24 bytes: the PNG signature and IHDR's size.
    let size = data
        .and_then(|d| d.get(..32))
        .and_then(|head| base64::engine::general_purpose::STANDARD.decode(head).ok())
        .and_then(|bytes| png_size(&bytes));
    match size {
        Some((w, h)) => w
            .div_ceil(TILE_SIDE)
            .saturating_mul(h.div_ceil(TILE_SIDE))
            .max(1),
        None => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::image::Images;
    use serde_json::json;

    #[test]
    fn each_api_s_image_parts_are_tiled_by_their_size() {
        let imgs = Images::generated(1, 1024, 600).unwrap().for_prompt("p");
        let (url, data) = (imgs[0].data_url(), imgs[0].base64.clone());
        let chat = json!({"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"},
            {"type": "image_url", "image_url": {"url": url}}]}]});
        let responses = json!({"input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"},
            {"type": "input_image", "image_url": url}, {"type": "input_image", "image_url": "https://x/y.png"}]}]});
        let messages = json!({"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}]}]});
        // 1024 × 600: 2 × 2 tiles; a URL the mock cannot read is one.
        assert_eq!(
            [tiles(&chat), tiles(&responses), tiles(&messages)],
            [4, 5, 4]
        );
        assert_eq!(
            tiles(&json!({"messages": [{"role": "user", "content": "no image"}]})),
            0
        );
    }
}
