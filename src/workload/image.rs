//! Images a probe sends with its prompt, as `data:` URLs: generated PNGs of a configured
//! size (their pixels drawn from the prompt, so a prompt with its unique nonce gets an
//! image of its own and no server-side image cache answers for the preprocessing), or a
//! file's bytes sent as they are. The PNG encoder is the smallest valid one: 8-bit RGB,
//! filter 0 on every row, the zlib stream made of stored (uncompressed) deflate blocks,
//! with the CRC-32 and Adler-32 it needs. Pure apart from reading the file once.

use std::path::Path;
use std::sync::Arc;

use base64::Engine;

/// Most images one request carries.
pub const MAX_IMAGES: u32 = 16;
/// Largest side of a generated image, in pixels (4096² RGB is 48 MiB raw).
pub const MAX_SIDE: u32 = 4096;
/// Largest image file read.
pub const MAX_FILE_BYTES: u64 = 20 << 20;

/// What images each request carries (none by default).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Images {
    #[default]
    None,
    /// `count` generated PNGs of `width` × `height` pixels.
    Generated { count: u32, width: u32, height: u32 },
    /// One file's bytes, with its media type.
    File {
        media_type: &'static str,
        bytes: Arc<Vec<u8>>,
    },
}

/// One image of a request: its media type and bytes, base64-encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    pub media_type: &'static str,
    pub base64: String,
}

impl Image {
    /// The `data:` URL of the image.
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.media_type, self.base64)
    }
}

impl Images {
    pub fn is_none(&self) -> bool {
        *self == Images::None
    }

    /// Checks a generated image's shape; the error names what is wrong.
    pub fn generated(count: u32, width: u32, height: u32) -> Result<Images, String> {
        if !(1..=MAX_IMAGES).contains(&count) {
            return Err(format!("count must be 1 to {MAX_IMAGES}, got {count}"));
        }
        for (name, side) in [("width", width), ("height", height)] {
            if !(1..=MAX_SIDE).contains(&side) {
                return Err(format!("{name} must be 1 to {MAX_SIDE} pixels, got {side}"));
            }
        }
        Ok(Images::Generated {
            count,
            width,
            height,
        })
    }

    /// Reads an image file (PNG, JPEG, GIF or WebP, known by its first bytes).
    pub fn file(path: &Path) -> Result<Images, String> {
        use std::io::Read;
        let f = std::fs::File::open(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let mut bytes = Vec::new();
        f.take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(format!(
                "{} is larger than {MAX_FILE_BYTES} bytes",
                path.display()
            ));
        }
        let media_type = media_type(&bytes)
            .ok_or_else(|| format!("{} is no PNG, JPEG, GIF or WebP image", path.display()))?;
        Ok(Images::File {
            media_type,
            bytes: Arc::new(bytes),
        })
    }

    /// The images of one request whose prompt is `prompt`.
    pub fn for_prompt(&self, prompt: &str) -> Vec<Image> {
        let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
        match self {
            Images::None => Vec::new(),
            Images::File { media_type, bytes } => vec![Image {
                media_type,
                base64: b64(bytes),
            }],
            Images::Generated {
                count,
                width,
                height,
            } => (0..*count)
                .map(|i| Image {
                    media_type: "image/png",
                    base64: b64(&png(*width, *height, fnv(prompt) ^ u64::from(i))),
                })
                .collect(),
        }
    }
}

/// The media type of an image by its magic bytes.
fn media_type(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// FNV-1a of a text: the generated image's seed.
fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A `width` × `height` RGB PNG: a gradient whose colours come from `seed`.
pub fn png(width: u32, height: u32, seed: u64) -> Vec<u8> {
    let [r0, g0, b0, ..] = seed.to_le_bytes();
    let row = 1 + 3 * width as usize;
    let mut raw = Vec::with_capacity(row * height as usize);
    for y in 0..height {
        raw.push(0); // filter: none
        for x in 0..width {
            raw.push(r0.wrapping_add(x as u8));
            raw.push(g0.wrapping_add(y as u8));
            raw.push(b0.wrapping_add((x ^ y) as u8));
        }
    }
    let mut ihdr = Vec::with_capacity(13);
    ihdr.extend_from_slice(&width.to_be_bytes());
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]); // 8-bit RGB, deflate, filter 0, no interlace
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    chunk(&mut out, b"IHDR", &ihdr);
    chunk(&mut out, b"IDAT", &zlib_stored(&raw));
    chunk(&mut out, b"IEND", &[]);
    out
}

/// One PNG chunk: length, type, data, CRC-32 of type and data.
fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    let start = out.len();
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let crc = crc32(&out[start..]);
    out.extend_from_slice(&crc.to_be_bytes());
}

/// A zlib stream of stored deflate blocks (at most 65535 bytes each).
fn zlib_stored(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + data.len() / 65535 * 5 + 16);
    out.extend_from_slice(&[0x78, 0x01]);
    let mut blocks = data.chunks(65535).peekable();
    if blocks.peek().is_none() {
        out.extend_from_slice(&[1, 0, 0, 0xff, 0xff]);
    }
    while let Some(block) = blocks.next() {
        let last = u8::from(blocks.peek().is_none());
        let len = block.len() as u16;
        out.push(last);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(block);
    }
    out.extend_from_slice(&adler32(data).to_be_bytes());
    out
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = (crc >> 1) ^ (0xedb8_8320 & (crc & 1).wrapping_neg());
        }
    }
    !crc
}

fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in data.chunks(5552) {
        for &x in chunk {
            a += u32::from(x);
            b += a;
        }
        a %= 65521;
        b %= 65521;
    }
    (b << 16) | a
}

/// The pixel size of a PNG from its header, for the mock's image cost.
pub fn png_size(bytes: &[u8]) -> Option<(u32, u32)> {
    if bytes.len() < 24 || !bytes.starts_with(b"\x89PNG\r\n\x1a\n") || &bytes[12..16] != b"IHDR" {
        return None;
    }
    let be = |i: usize| u32::from_be_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
    Some((be(16), be(20)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checksums_are_the_standard_ones() {
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
        assert_eq!(adler32(b"Wikipedia"), 0x11e6_0398);
    }

    #[test]
    fn a_generated_png_is_well_formed_and_says_its_size() {
        let p = png(70_000 / 3, 2, 7);
        assert_eq!(png_size(&p), Some((70_000 / 3, 2)));
        // Rows of 1 + 3 × 23333 bytes, twice: 140,000 bytes in three stored blocks.
        let idat_len = u32::from_be_bytes([p[33], p[34], p[35], p[36]]) as usize;
        assert_eq!(&p[37..41], b"IDAT");
        let raw = 2 * (1 + 3 * 23_333);
        assert_eq!(idat_len, 2 + raw + 3 * 5 + 4);
        assert!(p.ends_with(&[0, 0, 0, 0, b'I', b'E', b'N', b'D', 0xae, 0x42, 0x60, 0x82]));
        assert_eq!(media_type(&p), Some("image/png"));
    }

    #[test]
    fn each_prompt_gets_its_own_image_and_a_prompt_always_the_same() {
        let images = Images::generated(2, 8, 4).unwrap();
        let a = images.for_prompt("nonce one");
        assert_eq!(a.len(), 2);
        assert_ne!(a[0], a[1]);
        assert_eq!(a, images.for_prompt("nonce one"));
        assert_ne!(a, images.for_prompt("nonce two"));
        assert!(
            a[0].data_url()
                .starts_with("data:image/png;base64,iVBORw0KGgo")
        );
        assert!(Images::generated(0, 8, 8).is_err());
        assert!(Images::generated(1, 8, MAX_SIDE + 1).is_err());
    }
}
