//! Mirrors `state/classic/consumer_protocol.py`: the classic consumer protocol's byte blobs (Kafka's
//! ConsumerProtocol.java). What a consumer puts in its JoinGroup metadata (Subscription), what the leader
//! hands back through SyncGroup (Assignment), and the userData layouts of the two sticky assignors.
//!
//! Every blob is an int16 version followed by non-flexible fields: strings are an int16 length plus UTF-8,
//! bytes an int32 length (-1 for null), arrays an int32 count. Writers emit version 3 unless told otherwise
//! and drop fields the chosen version lacks. Readers take any version >= 0, read a higher one as version 3
//! and ignore trailing bytes. Structural damage raises ConsumerProtocolError; malformed UTF-8 inside a
//! string is replaced, as Java's `new String(bytes, UTF_8)` does.

use std::fmt;
use std::rc::Rc;

use crate::java_compat::{JavaHash, JavaHashMap, java_string_cmp, topic_partition_hash_code};

pub const PROTOCOL_TYPE: &str = "consumer";
pub const HIGHEST_VERSION: i16 = 3;
const MAX_STRING_BYTES: usize = 0x7FFF;

/// org.apache.kafka.common.TopicPartition. The topic is shared: an assignment holds many partitions of
/// few topics.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicPartition {
    pub topic: Rc<str>,
    pub partition: i32,
}

impl TopicPartition {
    pub fn new(topic: &Rc<str>, partition: i32) -> Self {
        TopicPartition { topic: Rc::clone(topic), partition }
    }
}

impl fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

impl JavaHash for TopicPartition {
    fn java_hash(&self) -> i32 {
        topic_partition_hash_code(&self.topic, self.partition)
    }
}

/// A blob that cannot be decoded (ConsumerProtocolError): what, the problem, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsumerProtocolError(pub String);

impl fmt::Display for ConsumerProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConsumerProtocolError {}

/// ConsumerProtocolSubscription as the Java client models it after decoding. `generation_id` None when
/// absent (versions 0-1, or a negative value); an empty rack reads as None.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Subscription {
    pub topics: Vec<String>,
    pub user_data: Option<Vec<u8>>,
    pub owned_partitions: Vec<TopicPartition>,
    pub generation_id: Option<i32>,
    pub rack_id: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Assignment {
    pub partitions: Vec<TopicPartition>,
    pub user_data: Option<Vec<u8>>,
}

/// StickyAssignor's userData: the previous assignment, and its generation from V1 on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StickyUserData {
    pub partitions: Vec<TopicPartition>,
    pub generation: Option<i32>,
}

/// A bounds-checked big-endian reader over a blob, failing with the field it was reading.
struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    what: &'static str,
}

impl<'a> Reader<'a> {
    fn new(data: &'a [u8], what: &'static str) -> Self {
        Reader { data, pos: 0, what }
    }

    fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    fn fail(&self, message: String) -> ConsumerProtocolError {
        ConsumerProtocolError(format!("{}: {} (at byte {} of {})", self.what, message, self.pos, self.data.len()))
    }

    fn take(&mut self, n: usize, field: &str) -> Result<&'a [u8], ConsumerProtocolError> {
        if n > self.remaining() {
            return Err(self.fail(format!("{field} needs {n} bytes but only {} remain", self.remaining())));
        }
        let out = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    fn int16(&mut self, field: &str) -> Result<i16, ConsumerProtocolError> {
        let b = self.take(2, field)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }

    fn int32(&mut self, field: &str) -> Result<i32, ConsumerProtocolError> {
        let b = self.take(4, field)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn string(&mut self, field: &str) -> Result<String, ConsumerProtocolError> {
        let length = self.int16(field)?;
        if length < 0 {
            return Err(self.fail(format!("non-nullable field {field} was serialized as null")));
        }
        // Undecodable bytes become U+FFFD, as the Python reference's "replace" does.
        Ok(String::from_utf8_lossy(self.take(length as usize, field)?).into_owned())
    }

    fn nullable_string(&mut self, field: &str) -> Result<Option<String>, ConsumerProtocolError> {
        let length = self.int16(field)?;
        if length < 0 {
            return Ok(None);
        }
        Ok(Some(String::from_utf8_lossy(self.take(length as usize, field)?).into_owned()))
    }

    fn nullable_bytes(&mut self, field: &str) -> Result<Option<Vec<u8>>, ConsumerProtocolError> {
        let length = self.int32(field)?;
        if length < 0 {
            return Ok(None);
        }
        Ok(Some(self.take(length as usize, field)?.to_vec()))
    }

    fn version(&mut self) -> Result<i16, ConsumerProtocolError> {
        let version = self.int16("version")?;
        if version < 0 {
            return Err(self.fail(format!("Unsupported {} version: {version}", self.what)));
        }
        Ok(version.min(HIGHEST_VERSION))
    }

    fn array_length(&mut self, field: &str) -> Result<usize, ConsumerProtocolError> {
        let n = self.int32(field)?;
        if n < 0 {
            return Err(self.fail(format!("non-nullable field {field} was serialized as null")));
        }
        // Every element takes at least one byte, so a larger count can only be garbage.
        if n as usize > self.remaining() {
            return Err(self.fail(format!("{field} claims {n} elements but only {} bytes remain", self.remaining())));
        }
        Ok(n as usize)
    }

    fn topic_partitions(&mut self, field: &str) -> Result<Vec<TopicPartition>, ConsumerProtocolError> {
        let topic_field = format!("{field}.topic");
        let partitions_field = format!("{field}.partitions");
        let mut out = Vec::new();
        for _ in 0..self.array_length(field)? {
            let topic: Rc<str> = Rc::from(self.string(&topic_field)?);
            let n = self.array_length(&partitions_field)?;
            let numbers = self.take(4 * n, &partitions_field)?;
            out.extend(numbers.chunks_exact(4).map(|b| TopicPartition {
                topic: Rc::clone(&topic),
                partition: i32::from_be_bytes([b[0], b[1], b[2], b[3]]),
            }));
        }
        Ok(out)
    }
}

/// The version a blob declares (before clamping to the highest known version).
pub fn decode_version(data: &[u8]) -> Result<i16, ConsumerProtocolError> {
    Reader::new(data, "consumer protocol header").int16("version")
}

pub fn decode_subscription(data: &[u8]) -> Result<Subscription, ConsumerProtocolError> {
    let mut r = Reader::new(data, "subscription");
    let version = r.version()?;
    let n = r.array_length("topics")?;
    let topics = (0..n).map(|_| r.string("topics")).collect::<Result<Vec<_>, _>>()?;
    let user_data = r.nullable_bytes("user_data")?;
    let owned_partitions = if version >= 1 { r.topic_partitions("owned_partitions")? } else { Vec::new() };
    let generation = if version >= 2 { r.int32("generation_id")? } else { -1 };
    let rack_id = if version >= 3 { r.nullable_string("rack_id")? } else { None };
    Ok(Subscription {
        topics,
        user_data,
        owned_partitions,
        generation_id: (generation >= 0).then_some(generation),
        rack_id: rack_id.filter(|r| !r.is_empty()),
    })
}

pub fn decode_assignment(data: &[u8]) -> Result<Assignment, ConsumerProtocolError> {
    let mut r = Reader::new(data, "assignment");
    r.version()?;
    let partitions = r.topic_partitions("assigned_partitions")?;
    Ok(Assignment { partitions, user_data: r.nullable_bytes("user_data")? })
}

/// Strict decode: a V1 blob has four more bytes after the partition array; fewer means V0.
pub fn decode_sticky_user_data(data: &[u8]) -> Result<StickyUserData, ConsumerProtocolError> {
    let mut r = Reader::new(data, "sticky userData");
    let partitions = r.topic_partitions("previous_assignment")?;
    let generation = if r.remaining() >= 4 { Some(r.int32("generation")?) } else { None };
    Ok(StickyUserData { partitions, generation })
}

pub fn decode_cooperative_user_data(data: &[u8]) -> Result<i32, ConsumerProtocolError> {
    Reader::new(data, "cooperative-sticky userData").int32("generation")
}

// ---------------------------------------------------------------------------------------------- writing

/// An int32 field as the reference holds it (any integer), checked when written.
pub type Int = i64;

struct Writer {
    out: Vec<u8>,
}

impl Writer {
    fn new() -> Self {
        Writer { out: Vec::new() }
    }

    fn int16(&mut self, value: i16) {
        self.out.extend_from_slice(&value.to_be_bytes());
    }

    fn int32(&mut self, value: Int, field: &str) -> Result<(), ConsumerProtocolError> {
        let value = i32::try_from(value)
            .map_err(|_| ConsumerProtocolError(format!("{field}: {value} does not fit in an int32")))?;
        self.out.extend_from_slice(&value.to_be_bytes());
        Ok(())
    }

    fn string(&mut self, value: &str, field: &str) -> Result<(), ConsumerProtocolError> {
        if value.len() > MAX_STRING_BYTES {
            return Err(ConsumerProtocolError(format!(
                "{field}: {} UTF-8 bytes is longer than {MAX_STRING_BYTES}",
                value.len()
            )));
        }
        self.int16(value.len() as i16);
        self.out.extend_from_slice(value.as_bytes());
        Ok(())
    }

    fn nullable_string(&mut self, value: Option<&str>, field: &str) -> Result<(), ConsumerProtocolError> {
        match value {
            None => {
                self.int16(-1);
                Ok(())
            }
            Some(v) => self.string(v, field),
        }
    }

    fn nullable_bytes(&mut self, value: Option<&[u8]>) {
        match value {
            None => self.count(-1),
            Some(v) => {
                self.count(v.len() as i32);
                self.out.extend_from_slice(v);
            }
        }
    }

    /// An array or bytes length.
    fn count(&mut self, n: i32) {
        self.out.extend_from_slice(&n.to_be_bytes());
    }

    fn topic_partitions(&mut self, groups: &[(&str, Vec<Int>)], field: &str) -> Result<(), ConsumerProtocolError> {
        self.count(groups.len() as i32);
        for (topic, partitions) in groups {
            self.string(topic, &format!("{field}.topic"))?;
            self.count(partitions.len() as i32);
            for &p in partitions {
                self.int32(p, &format!("{field}.partitions"))?;
            }
        }
        Ok(())
    }
}

fn check_write_version(version: Int, what: &str) -> Result<i16, ConsumerProtocolError> {
    if version < 0 {
        return Err(ConsumerProtocolError(format!("Unsupported {what} version: {version}")));
    }
    Ok(version.min(Int::from(HIGHEST_VERSION)) as i16)
}

/// What the writers take: partitions as (topic, partition) with the partition not yet checked to fit.
pub type Partitions = [(String, Int)];

/// A Subscription to write: its int32 fields as any integer, checked by the writer.
#[derive(Clone, Debug, Default)]
pub struct SubscriptionToWrite {
    pub topics: Vec<String>,
    pub user_data: Option<Vec<u8>>,
    pub owned_partitions: Vec<(String, Int)>,
    pub generation_id: Option<Int>,
    pub rack_id: Option<String>,
}

pub fn encode_subscription(sub: &SubscriptionToWrite, version: Int) -> Result<Vec<u8>, ConsumerProtocolError> {
    let version = check_write_version(version, "subscription")?;
    let mut w = Writer::new();
    w.int16(version);
    let mut topics: Vec<&String> = sub.topics.iter().collect();
    topics.sort_by(|a, b| java_string_cmp(a, b));
    w.count(topics.len() as i32);
    for topic in topics {
        w.string(topic, "topics")?;
    }
    w.nullable_bytes(sub.user_data.as_deref());
    if version >= 1 {
        let mut owned: Vec<&(String, Int)> = sub.owned_partitions.iter().collect();
        owned.sort_by(|a, b| java_string_cmp(&a.0, &b.0).then(a.1.cmp(&b.1)));
        // Consecutive runs of one topic, as the writer emits its sorted owned partitions.
        let mut runs: Vec<(&str, Vec<Int>)> = Vec::new();
        for (topic, partition) in owned {
            match runs.last_mut() {
                Some((t, ps)) if *t == topic.as_str() => ps.push(*partition),
                _ => runs.push((topic, vec![*partition])),
            }
        }
        w.topic_partitions(&runs, "owned_partitions")?;
    }
    if version >= 2 {
        w.int32(sub.generation_id.unwrap_or(-1), "generation_id")?;
    }
    if version >= 3 {
        w.nullable_string(sub.rack_id.as_deref(), "rack_id")?;
    }
    Ok(w.out)
}

pub fn encode_assignment(
    partitions: &Partitions,
    user_data: Option<&[u8]>,
    version: Int,
) -> Result<Vec<u8>, ConsumerProtocolError> {
    let version = check_write_version(version, "assignment")?;
    let mut w = Writer::new();
    w.int16(version);
    // The writer looks each topic up in the collection built so far, so a topic that reappears later in the
    // list joins its first group: grouping is by first appearance, not by consecutive runs.
    let mut by_topic: Vec<(&str, Vec<Int>)> = Vec::new();
    for (topic, partition) in partitions {
        match by_topic.iter_mut().find(|(t, _)| *t == topic.as_str()) {
            Some((_, ps)) => ps.push(*partition),
            None => by_topic.push((topic, vec![*partition])),
        }
    }
    w.topic_partitions(&by_topic, "assigned_partitions")?;
    w.nullable_bytes(user_data);
    Ok(w.out)
}

/// StickyAssignor userData. Version 1 (what every client since 2.3 writes) appends the generation. Topics
/// come out in java.util.HashMap order (CollectionUtils.groupPartitionsByTopic); partitions keep their list
/// order within a topic.
pub fn encode_sticky_user_data(
    partitions: &Partitions,
    generation: Option<Int>,
    version: Int,
) -> Result<Vec<u8>, ConsumerProtocolError> {
    if version != 0 && version != 1 {
        return Err(ConsumerProtocolError(format!("Unsupported sticky userData version: {version}")));
    }
    // Each topic's partitions, and where the HashMap puts the topic.
    let mut index: JavaHashMap<String, usize> = JavaHashMap::default();
    let mut lists: Vec<Vec<Int>> = Vec::new();
    for (topic, partition) in partitions {
        let i = match index.get(topic) {
            Some(&i) => i,
            None => {
                index.insert(topic.clone(), lists.len());
                lists.push(Vec::new());
                lists.len() - 1
            }
        };
        lists[i].push(*partition);
    }
    let groups: Vec<(&str, Vec<Int>)> =
        index.entries().into_iter().map(|(t, &i)| (t.as_str(), std::mem::take(&mut lists[i]))).collect();
    let mut w = Writer::new();
    w.topic_partitions(&groups, "previous_assignment")?;
    if version == 1 {
        let generation =
            generation.ok_or_else(|| ConsumerProtocolError("sticky userData V1 needs a generation".into()))?;
        w.int32(generation, "generation")?;
    }
    Ok(w.out)
}

/// CooperativeStickyAssignor userData: just the generation of the member's last assignment.
pub fn encode_cooperative_user_data(generation: Int) -> Result<Vec<u8>, ConsumerProtocolError> {
    let mut w = Writer::new();
    w.int32(generation, "generation")?;
    Ok(w.out)
}
