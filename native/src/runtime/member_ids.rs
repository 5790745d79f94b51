//! Mirrors `state/runtime/member_ids.py`: the ids a group's coordinator hands out, classic member ids
//! (Kafka's clientId or group.instance.id + "-" + a random UUID) and consumer-protocol member ids
//! (Uuid.randomUuid().toString()), derived from the group id and a counter instead of randomness, so runs
//! are reproducible. One counter serves both, in the order ids are asked for.

use crate::consumer_group::topic_id::TopicId;
use crate::sha256::uuid4_bytes;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberIds {
    pub group_id: String,
    pub counter: u64,
}

impl MemberIds {
    pub fn new(group_id: &str) -> MemberIds {
        MemberIds { group_id: group_id.to_string(), counter: 0 }
    }

    /// clientId (or group.instance.id) + "-" + a UUID, as Kafka's classic group coordinator does.
    pub fn member_id(&mut self, prefix: &str) -> String {
        let raw = self.next_digest();
        let hex: String = raw.iter().map(|b| format!("{b:02x}")).collect();
        format!("{prefix}-{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
    }

    /// A Kafka Uuid's text (URL-safe base64).
    pub fn uuid(&mut self) -> String {
        let raw = self.next_digest();
        TopicId {
            msb: i64::from_be_bytes(raw[..8].try_into().expect("8 bytes")),
            lsb: i64::from_be_bytes(raw[8..].try_into().expect("8 bytes")),
        }
        .to_string()
    }

    fn next_digest(&mut self) -> [u8; 16] {
        self.counter += 1;
        uuid4_bytes(format!("{}\0{}", self.group_id, self.counter).as_bytes())
    }
}
