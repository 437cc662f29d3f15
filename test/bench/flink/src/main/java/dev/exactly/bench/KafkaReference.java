package dev.exactly.bench;

import java.time.Duration;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.serialization.SimpleStringSchema;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * Kafka in → exactly-once Kafka out, the Kafka bench job, on Flink: reads the input topic from
 * its start to its end (bounded, read_committed) and writes each value to the output topic
 * through KafkaSink at EXACTLY_ONCE, checkpointing every interval into a local directory.
 *
 * <p>Arguments: brokers input output parallelism intervalMs checkpointDir. Prints
 * {@code FLINK_RESULT <milliseconds>}: the job's net runtime, from its start to its end (its
 * last checkpoint committed), the JVM's and the local cluster's start excluded.
 */
public final class KafkaReference {
  public static void main(String[] args) throws Exception {
    String brokers = args[0];
    String input = args[1];
    String output = args[2];
    int parallelism = Integer.parseInt(args[3]);
    long intervalMs = Long.parseLong(args[4]);
    String checkpoints = args[5];

    Configuration config = new Configuration();
    config.setString("state.checkpoints.dir", "file://" + checkpoints);
    config.setString("execution.checkpointing.storage", "filesystem");
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(config);
    env.setParallelism(parallelism);
    env.enableCheckpointing(intervalMs);

    KafkaSource<String> source =
        KafkaSource.<String>builder()
            .setBootstrapServers(brokers)
            .setTopics(input)
            .setGroupId(output)
            .setStartingOffsets(OffsetsInitializer.earliest())
            .setBounded(OffsetsInitializer.latest())
            .setProperty("isolation.level", "read_committed")
            .setValueOnlyDeserializer(new SimpleStringSchema())
            .build();
    KafkaSink<String> sink =
        KafkaSink.<String>builder()
            .setBootstrapServers(brokers)
            .setDeliveryGuarantee(DeliveryGuarantee.EXACTLY_ONCE)
            .setTransactionalIdPrefix(output)
            .setProperty("transaction.timeout.ms", Long.toString(Duration.ofMinutes(2).toMillis()))
            .setRecordSerializer(
                KafkaRecordSerializationSchema.builder()
                    .setTopic(output)
                    .setValueSerializationSchema(new SimpleStringSchema())
                    .build())
            .build();
    env.fromSource(source, WatermarkStrategy.noWatermarks(), "kafka-in").sinkTo(sink).name("kafka-out");

    long runtimeMs = env.execute("bench-flink-kafka").getNetRuntime();
    System.out.println("FLINK_RESULT " + runtimeMs);
  }
}
