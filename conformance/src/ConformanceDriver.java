/*
 * coordsim's conformance driver: a real Kafka Java consumer (kafka-clients), scripted line by line on stdin by
 * simulations/conformance/driver.py, or a one-shot admin/reader task. Compiled at test time with javac against
 * the classpath the Maven project beside it resolves for one Kafka version; nothing of it is built in advance.
 *
 *   consumer BOOTSTRAP key=value...   one KafkaConsumer (topics=a,b; pattern=REGEX, a java.util.regex.Pattern the
 *       client resolves; or regex=RE2J, a SubscriptionPattern the broker resolves under group.protocol=consumer;
 *       any consumer config).
 *       It keeps polling (100 ms) between commands, as an application's loop does. stdin commands:
 *         commit OFFSET       commitSync(OFFSET for every partition assigned now) -> "committed t-p=o,..." or
 *                             "commit-failed ExceptionClass"
 *         stall MS            no poll for MS ms (a slow record handler), then "stalled"
 *         close               close() (the LeaveGroup / leave heartbeat), then "closed" and exit
 *       stdout events: "ready", "assigned t-p,..." (the whole assignment after each callback, sorted),
 *       "revoked t-p,...", "lost t-p,...".
 *   topics BOOTSTRAP name:partitions...   create the topics (replication factor 1), print "created"
 *   coordinator BOOTSTRAP GROUP           print "coordinator NODE": the leader of the group's __consumer_offsets
 *                                         partition, after an OffsetFetch that has the group's coordinator
 *                                         loaded (the group need not exist)
 *   dump BOOTSTRAP                        every record of __consumer_offsets, one JSON line each (partition,
 *                                         offset, timestamp, key and value base64, value null for a tombstone)
 *
 * A consumer's crash is the suite killing its process (SIGKILL): no LeaveGroup, as a real crash.
 */

import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.utils.Utils;

public final class ConformanceDriver {

    private static final String OFFSETS = "__consumer_offsets";

    public static void main(String[] args) throws Exception {
        String bootstrap = args[1];
        switch (args[0]) {
            case "consumer" -> consumer(bootstrap, args);
            case "topics" -> topics(bootstrap, args);
            case "coordinator" -> coordinator(bootstrap, args[2]);
            case "dump" -> dump(bootstrap);
            default -> throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }

    private static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    private static String partitions(Collection<TopicPartition> tps) {
        TreeSet<String> names = new TreeSet<>();
        for (TopicPartition tp : tps) names.add(tp.topic() + "-" + tp.partition());
        return String.join(",", names);
    }

    private static void consumer(String bootstrap, String[] args) throws Exception {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        String topics = null, pattern = null, regex = null;
        for (int i = 2; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            if (kv[0].equals("topics")) topics = kv[1];
            else if (kv[0].equals("pattern")) pattern = kv[1];
            else if (kv[0].equals("regex")) regex = kv[1];
            else props.put(kv[0], kv[1]);
        }
        LinkedBlockingQueue<String> commands = new LinkedBlockingQueue<>();
        Thread reader = new Thread(() -> {
            try (java.io.BufferedReader in = new java.io.BufferedReader(new java.io.InputStreamReader(System.in))) {
                String line;
                while ((line = in.readLine()) != null) commands.add(line.trim());
            } catch (java.io.IOException e) {
                // the suite went away: behave as a crash, below
            }
            commands.add("eof");
        }, "stdin");
        reader.setDaemon(true);
        reader.start();

        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props);
        ConsumerRebalanceListener listener = new ConsumerRebalanceListener() {
            @Override public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                say("revoked " + partitions(partitions));
            }
            @Override public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                say("assigned " + partitions(consumer.assignment()));
            }
            @Override public void onPartitionsLost(Collection<TopicPartition> partitions) {
                say("lost " + partitions(partitions));
            }
        };
        if (regex != null) consumer.subscribe(new SubscriptionPattern(regex), listener);
        else if (pattern != null) consumer.subscribe(Pattern.compile(pattern), listener);
        else consumer.subscribe(List.of(topics.split(",")), listener);
        say("ready");
        while (true) {
            String command = commands.poll();
            if (command == null) {
                consumer.poll(Duration.ofMillis(100));
                continue;
            }
            String[] words = command.split(" ");
            switch (words[0]) {
                case "commit" -> {
                    Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                    for (TopicPartition tp : consumer.assignment())
                        offsets.put(tp, new OffsetAndMetadata(Long.parseLong(words[1])));
                    try {
                        consumer.commitSync(offsets);
                        List<String> done = new ArrayList<>();
                        for (var e : offsets.entrySet()) done.add(e.getKey() + "=" + e.getValue().offset());
                        done.sort(null);
                        say("committed " + String.join(",", done));
                    } catch (RuntimeException e) {
                        say("commit-failed " + e.getClass().getSimpleName());
                    }
                }
                case "stall" -> {
                    Thread.sleep(Long.parseLong(words[1]));
                    say("stalled");
                }
                case "close" -> {
                    consumer.close();
                    say("closed");
                    System.exit(0);
                }
                case "eof" -> Runtime.getRuntime().halt(3);
                default -> say("unknown-command " + command);
            }
        }
    }

    private static Admin admin(String bootstrap) {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        return Admin.create(props);
    }

    private static void topics(String bootstrap, String[] args) throws Exception {
        List<NewTopic> topics = new ArrayList<>();
        for (int i = 2; i < args.length; i++) {
            String[] np = args[i].split(":");
            topics.add(new NewTopic(np[0], Integer.parseInt(np[1]), (short) 1));
        }
        try (Admin admin = admin(bootstrap)) {
            admin.createTopics(topics).all().get(60, TimeUnit.SECONDS);
        }
        say("created");
    }

    private static void coordinator(String bootstrap, String group) throws Exception {
        try (Admin admin = admin(bootstrap)) {
            // An OffsetFetch through the group's coordinator: the first one creates __consumer_offsets, and the
            // admin client retries until the coordinator has loaded the partition.
            admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(60, TimeUnit.SECONDS);
            // The group's partition as the coordinator picks it (GroupCoordinatorService.partitionFor).
            TopicDescription offsets = admin.describeTopics(List.of(OFFSETS)).allTopicNames().get(60, TimeUnit.SECONDS)
                .get(OFFSETS);
            int partition = Utils.abs(group.hashCode()) % offsets.partitions().size();
            for (TopicPartitionInfo p : offsets.partitions())
                if (p.partition() == partition) say("coordinator " + p.leader().id());
        }
    }

    private static void dump(String bootstrap) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.EXCLUDE_INTERNAL_TOPICS_CONFIG, "false");
        Base64.Encoder b64 = Base64.getEncoder();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (PartitionInfo p : consumer.partitionsFor("__consumer_offsets"))
                tps.add(new TopicPartition(p.topic(), p.partition()));
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            Map<TopicPartition, Long> end = consumer.endOffsets(tps);
            while (true) {
                boolean done = true;
                for (TopicPartition tp : tps) done &= consumer.position(tp) >= end.get(tp);
                if (done) break;
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                    say("{\"partition\": " + r.partition() + ", \"offset\": " + r.offset() + ", \"timestamp\": "
                        + r.timestamp() + ", \"key\": \"" + b64.encodeToString(r.key()) + "\", \"value\": "
                        + (r.value() == null ? "null" : "\"" + b64.encodeToString(r.value()) + "\"") + "}");
                }
            }
        }
    }
}
