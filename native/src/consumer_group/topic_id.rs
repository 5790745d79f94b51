//! Mirrors `state/consumer_group/topic_id.py` (the part the assignors need): a topic id as Kafka's
//! `org.apache.kafka.common.Uuid`, with the three Java behaviours that change the server-side assignors'
//! output: its text form (URL-safe base64 without padding, Uuid.toString), hashCode (its java.util.HashSet
//! bucket) and compareTo (signed most significant half, then signed least significant half: the derived
//! `Ord`), and back from the text (Uuid.fromString); and the id coordsim derives for a topic whose input
//! names none (`derived_topic_id`).

use std::fmt;

use crate::java_compat::JavaHash;
use crate::sha256::uuid4_bytes;

/// A Kafka Uuid as its two signed 64-bit halves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicId {
    pub msb: i64,
    pub lsb: i64,
}

impl JavaHash for TopicId {
    /// Uuid.hashCode: the two 32-bit halves of (msb XOR lsb), XORed.
    fn java_hash(&self) -> i32 {
        let mixed = self.msb ^ self.lsb;
        ((mixed >> 32) ^ mixed) as i32
    }
}

const BASE64_URL: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

impl TopicId {
    /// Uuid.fromString: URL-safe base64 of 16 bytes, padding optional. Unlike the reference (Python's
    /// lenient decoder skips them), a character outside the alphabet is refused.
    pub fn from_string(text: &str) -> Result<TopicId, String> {
        let mut raw: Vec<u8> = Vec::with_capacity(16);
        let (mut bits, mut n_bits) = (0u32, 0);
        for c in text.trim_end_matches('=').bytes() {
            let value = BASE64_URL.iter().position(|&a| a == c).ok_or_else(|| format!("{text:?} is not base64url"))?;
            bits = (bits << 6) | value as u32;
            n_bits += 6;
            if n_bits >= 8 {
                n_bits -= 8;
                raw.push((bits >> n_bits) as u8);
                bits &= (1 << n_bits) - 1;
            }
        }
        let raw: [u8; 16] = raw
            .as_slice()
            .try_into()
            .map_err(|_| format!("{text:?} decodes to {} bytes, not the 16 of a Kafka Uuid", raw.len()))?;
        Ok(TopicId {
            msb: i64::from_be_bytes(raw[..8].try_into().expect("8 bytes")),
            lsb: i64::from_be_bytes(raw[8..].try_into().expect("8 bytes")),
        })
    }

    /// The 16 bytes Kafka writes for a Uuid: the two halves, big-endian.
    pub fn to_bytes(&self) -> [u8; 16] {
        let mut raw = [0u8; 16];
        raw[..8].copy_from_slice(&self.msb.to_be_bytes());
        raw[8..].copy_from_slice(&self.lsb.to_be_bytes());
        raw
    }
}

impl fmt::Display for TopicId {
    /// Uuid.toString: the 16 bytes in URL-safe base64, without the padding.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let raw = self.to_bytes();
        let mut out = String::with_capacity(22);
        for chunk in raw.chunks(3) {
            let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
            for i in 0..=chunk.len() {
                out.push(char::from(BASE64_URL[(n >> (18 - 6 * i) & 63) as usize]));
            }
        }
        f.write_str(&out)
    }
}

// Kafka's Uuid.ZERO_UUID ("no id") and METADATA_TOPIC_ID (AAAAAAAAAAAAAAAAAAAAAQ), which randomUuid never returns.
const RESERVED: [TopicId; 2] = [TopicId { msb: 0, lsb: 0 }, TopicId { msb: 0, lsb: 1 }];

/// The id coordsim gives a topic whose TOPIC_METADATA row names none. Kafka draws a random Uuid when it
/// creates a topic (Uuid.randomUuid: a version 4 UUID, drawn again when it is reserved or its text starts
/// with '-'); here the draws are SHA-256 of "coordsim-topic-id", the name and the draw's number, so a topic
/// has the same id in every run and on every engine.
pub fn derived_topic_id(name: &str) -> TopicId {
    (0u64..)
        .map(|draw| {
            let raw = uuid4_bytes(format!("coordsim-topic-id\0{name}\0{draw}").as_bytes());
            TopicId {
                msb: i64::from_be_bytes(raw[..8].try_into().expect("8 bytes")),
                lsb: i64::from_be_bytes(raw[8..].try_into().expect("8 bytes")),
            }
        })
        .find(|id| !RESERVED.contains(id) && !id.to_string().starts_with('-'))
        .expect("a draw that is neither reserved nor starts with '-'")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_form_is_kafkas() {
        // Uuid.METADATA_TOPIC_ID prints as AAAAAAAAAAAAAAAAAAAAAQ.
        assert_eq!(TopicId { msb: 0, lsb: 1 }.to_string(), "AAAAAAAAAAAAAAAAAAAAAQ");
        assert_eq!(TopicId { msb: -1, lsb: -1 }.to_string(), "_____________________w");
        // OffsetMessageFormatterTest's topic id, both ways.
        let id = TopicId::from_string("MKXx1fIkQy2J9jXHhK8m1w").unwrap();
        assert_eq!(
            id.to_bytes().iter().map(|b| format!("{b:02x}")).collect::<String>(),
            "30a5f1d5f224432d89f635c784af26d7"
        );
        assert_eq!(id.to_string(), "MKXx1fIkQy2J9jXHhK8m1w");
        assert!(TopicId::from_string("MKXx1fIkQy2J9jXHhK8m").is_err());
    }
}
