// FormatCheck reads a Kafka topic the way a Flink job on flink-json's change-log formats
// does, through the formats' own DeserializationSchema (CanalJsonDeserializationSchema,
// DebeziumJsonDeserializationSchema, MaxwellJsonDeserializationSchema, with their default
// options), and reduces the rows to a table state by primary key, printed as JSON on stdout
// for the Go format tests (wave/formats_integration_test.go):
//
//   java -cp <jars>:<classes> FormatCheck FORMAT BOOTSTRAP TOPIC SPEC
//
// FORMAT is canal-json, maxwell-json, debezium-json or debezium-json-schema (the envelope
// with its "schema" part, Flink's debezium-json.schema-include). SPEC is a file of one
// column a line, "name<TAB>Flink type<TAB>1 for a primary key column". The topic is read
// from its beginning to the end offsets it had when the program started.
//
// Output: {"messages":N,"tombstones":N,"rows":N,"errors":N,"ddl_refused":N,
// "first_errors":[...],"keys":N,"key_errors":N,"first_key_errors":[...],
// "values":N,"value_errors":N,"first_value_errors":[...],
// "state":[{column: value}...]}; for the debezium formats each record's key is read too,
// by Kafka Connect's JsonConverter (schemas.enable as the format's schema part), as a
// Connect sink reads it, and must be a struct (a map without a schema) holding the
// primary key's columns, and each value too, which with schemas holds it to its schema
// (a required field null, a value not of its type); values as strings (DECIMAL plain,
// TIMESTAMP "yyyy-MM-dd HH:mm:ss.ffffff", DATE ISO, TIME "HH:mm:ss", BYTES hex, ARRAY
// joined by ","), or null. A message Flink refuses counts as an error, except a Canal DDL
// message (isDdl true) that Flink's canal-json refuses (it skips CREATE and rejects the
// other DDL types unless canal-json.ignore-parse-errors is set): those are ddl_refused.
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Duration;
import java.time.LocalDate;
import java.time.LocalTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.flink.api.common.serialization.DeserializationSchema;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.formats.common.TimestampFormat;
import org.apache.flink.formats.json.canal.CanalJsonDeserializationSchema;
import org.apache.flink.formats.json.debezium.DebeziumJsonDeserializationSchema;
import org.apache.flink.formats.json.maxwell.MaxwellJsonDeserializationSchema;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.data.ArrayData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.DataType;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.Collector;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.json.JsonConverter;

public class FormatCheck {
    static final DateTimeFormatter TS = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSSSSS");
    static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("HH:mm:ss");

    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: FormatCheck FORMAT BOOTSTRAP TOPIC SPEC");
            System.exit(2);
        }
        String format = args[0], bootstrap = args[1], topic = args[2];
        List<String> names = new ArrayList<>();
        List<DataType> types = new ArrayList<>();
        List<Integer> pk = new ArrayList<>();
        for (String line : Files.readAllLines(Paths.get(args[3]), StandardCharsets.UTF_8)) {
            if (line.isBlank()) continue;
            String[] f = line.split("\t");
            if (f.length != 3) throw new IllegalArgumentException("spec line " + line + ": want name, type, pk");
            if (f[2].equals("1")) pk.add(names.size());
            names.add(f[0]);
            types.add(parseType(f[1]));
        }
        List<DataTypes.Field> rowFields = new ArrayList<>();
        for (int i = 0; i < names.size(); i++) rowFields.add(DataTypes.FIELD(names.get(i), types.get(i)));
        DataType row = DataTypes.ROW(rowFields.toArray(new DataTypes.Field[0]));

        // The produced type is only handed back by getProducedType, which nothing here calls;
        // a Flink job gets it from the table planner.
        TypeInformation<RowData> produced = TypeInformation.of(RowData.class);
        DeserializationSchema<RowData> schema;
        switch (format) {
            case "canal-json":
                schema = CanalJsonDeserializationSchema.builder(row, Collections.emptyList(), produced).build();
                break;
            case "maxwell-json":
                schema = new MaxwellJsonDeserializationSchema(row, Collections.emptyList(), produced, false, TimestampFormat.SQL);
                break;
            case "debezium-json":
            case "debezium-json-schema":
                schema = new DebeziumJsonDeserializationSchema(row, Collections.emptyList(), produced,
                        format.equals("debezium-json-schema"), false, TimestampFormat.SQL);
                break;
            default:
                throw new IllegalArgumentException("format " + format + ": want canal-json, maxwell-json, debezium-json or debezium-json-schema");
        }
        schema.open(null);

        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");

        long messages = 0, tombstones = 0, rows = 0, errors = 0, ddlRefused = 0, keys = 0, keyErrors = 0, values = 0, valueErrors = 0;
        List<String> firstErrors = new ArrayList<>(), firstKeyErrors = new ArrayList<>(), firstValueErrors = new ArrayList<>();
        JsonConverter keyConverter = null, valueConverter = null;
        if (format.startsWith("debezium-json")) {
            keyConverter = new JsonConverter();
            valueConverter = new JsonConverter();
            Map<String, Object> conf = new LinkedHashMap<>();
            conf.put("schemas.enable", format.equals("debezium-json-schema") ? "true" : "false");
            keyConverter.configure(conf, true);
            valueConverter.configure(conf, false);
        }
        Map<String, String[]> state = new LinkedHashMap<>();
        List<RowData> out = new ArrayList<>();
        Collector<RowData> collector = new Collector<RowData>() {
            public void collect(RowData r) { out.add(r); }
            public void close() {}
        };
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            List<TopicPartition> parts = new ArrayList<>();
            for (PartitionInfo p : consumer.partitionsFor(topic, Duration.ofSeconds(30))) {
                parts.add(new TopicPartition(topic, p.partition()));
            }
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
            Map<TopicPartition, Long> end = consumer.endOffsets(parts, Duration.ofSeconds(30));
            long deadline = System.currentTimeMillis() + 120_000;
            while (!caughtUp(consumer, parts, end)) {
                if (System.currentTimeMillis() > deadline) throw new IllegalStateException("topic " + topic + " not read to its end in 120 s");
                for (ConsumerRecord<byte[], byte[]> rec : consumer.poll(Duration.ofMillis(500))) {
                    if (rec.offset() >= end.get(new TopicPartition(rec.topic(), rec.partition()))) continue;
                    messages++;
                    if (keyConverter != null && rec.key() != null) {
                        keys++;
                        String bad = null;
                        try {
                            SchemaAndValue k = keyConverter.toConnectData(topic, rec.key());
                            for (int i : pk) {
                                Object v = k.value() instanceof Struct ? ((Struct) k.value()).get(names.get(i))
                                        : k.value() instanceof Map ? ((Map<?, ?>) k.value()).get(names.get(i)) : null;
                                if (v == null) bad = "key " + k.value() + " lacks primary key column " + names.get(i);
                            }
                        } catch (Exception e) {
                            bad = e + (e.getCause() != null ? " (" + e.getCause() + ")" : "");
                        }
                        if (bad != null) {
                            keyErrors++;
                            if (firstKeyErrors.size() < 5) firstKeyErrors.add(bad);
                        }
                    }
                    if (valueConverter != null && rec.value() != null) {
                        values++;
                        try {
                            valueConverter.toConnectData(topic, rec.value());
                        } catch (Exception e) {
                            valueErrors++;
                            if (firstValueErrors.size() < 5) firstValueErrors.add(e + (e.getCause() != null ? " (" + e.getCause() + ")" : ""));
                        }
                    }
                    if (rec.value() == null) {
                        tombstones++; // handed to Flink all the same: it skips them
                    }
                    out.clear();
                    try {
                        schema.deserialize(rec.value(), collector);
                    } catch (Exception e) {
                        String text = rec.value() == null ? "" : new String(rec.value(), StandardCharsets.UTF_8);
                        if (format.equals("canal-json") && text.contains("\"isDdl\":true")) {
                            ddlRefused++;
                            continue;
                        }
                        errors++;
                        if (firstErrors.size() < 5) firstErrors.add(e + (e.getCause() != null ? " (" + e.getCause() + ")" : ""));
                        continue;
                    }
                    for (RowData r : out) {
                        rows++;
                        String[] vals = new String[names.size()];
                        for (int i = 0; i < vals.length; i++) vals[i] = render(r, i, types.get(i).getLogicalType());
                        StringBuilder key = new StringBuilder();
                        for (int i : pk) key.append(vals[i]).append('\u0000');
                        RowKind kind = r.getRowKind();
                        if (kind == RowKind.INSERT || kind == RowKind.UPDATE_AFTER) {
                            state.put(key.toString(), vals);
                        } else {
                            state.remove(key.toString());
                        }
                    }
                }
            }
        }
        StringBuilder sb = new StringBuilder();
        sb.append("{\"messages\":").append(messages).append(",\"tombstones\":").append(tombstones)
          .append(",\"rows\":").append(rows).append(",\"errors\":").append(errors)
          .append(",\"ddl_refused\":").append(ddlRefused).append(",\"first_errors\":[");
        for (int i = 0; i < firstErrors.size(); i++) {
            if (i > 0) sb.append(',');
            quote(sb, firstErrors.get(i));
        }
        sb.append("],\"keys\":").append(keys).append(",\"key_errors\":").append(keyErrors).append(",\"first_key_errors\":[");
        for (int i = 0; i < firstKeyErrors.size(); i++) {
            if (i > 0) sb.append(',');
            quote(sb, firstKeyErrors.get(i));
        }
        sb.append("],\"values\":").append(values).append(",\"value_errors\":").append(valueErrors).append(",\"first_value_errors\":[");
        for (int i = 0; i < firstValueErrors.size(); i++) {
            if (i > 0) sb.append(',');
            quote(sb, firstValueErrors.get(i));
        }
        sb.append("],\"state\":[");
        boolean first = true;
        for (String[] vals : state.values()) {
            if (!first) sb.append(',');
            first = false;
            sb.append('{');
            for (int i = 0; i < vals.length; i++) {
                if (i > 0) sb.append(',');
                quote(sb, names.get(i));
                sb.append(':');
                if (vals[i] == null) sb.append("null");
                else quote(sb, vals[i]);
            }
            sb.append('}');
        }
        sb.append("]}");
        System.out.println(sb);
    }

    static boolean caughtUp(KafkaConsumer<byte[], byte[]> c, List<TopicPartition> parts, Map<TopicPartition, Long> end) {
        for (TopicPartition p : parts) {
            if (c.position(p) < end.get(p)) return false;
        }
        return true;
    }

    // parseType reads the Flink types the spec uses.
    static DataType parseType(String s) {
        s = s.trim().toUpperCase();
        if (s.startsWith("DECIMAL(")) {
            String[] ps = s.substring(8, s.length() - 1).split(",");
            return DataTypes.DECIMAL(Integer.parseInt(ps[0].trim()), Integer.parseInt(ps[1].trim()));
        }
        if (s.startsWith("TIMESTAMP(")) return DataTypes.TIMESTAMP(Integer.parseInt(s.substring(10, s.length() - 1)));
        switch (s) {
            case "BOOLEAN": return DataTypes.BOOLEAN();
            case "TINYINT": return DataTypes.TINYINT();
            case "SMALLINT": return DataTypes.SMALLINT();
            case "INT": return DataTypes.INT();
            case "BIGINT": return DataTypes.BIGINT();
            case "FLOAT": return DataTypes.FLOAT();
            case "DOUBLE": return DataTypes.DOUBLE();
            case "STRING": return DataTypes.STRING();
            case "BYTES": return DataTypes.BYTES();
            case "DATE": return DataTypes.DATE();
            case "TIME": return DataTypes.TIME();
            case "ARRAY<STRING>": return DataTypes.ARRAY(DataTypes.STRING());
        }
        throw new IllegalArgumentException("type " + s + " is not one FormatCheck reads");
    }

    static String render(RowData r, int i, LogicalType t) {
        if (r.isNullAt(i)) return null;
        switch (t.getTypeRoot()) {
            case BOOLEAN: return String.valueOf(r.getBoolean(i));
            case TINYINT: return String.valueOf(r.getByte(i));
            case SMALLINT: return String.valueOf(r.getShort(i));
            case INTEGER: return String.valueOf(r.getInt(i));
            case BIGINT: return String.valueOf(r.getLong(i));
            case FLOAT: return String.valueOf(r.getFloat(i));
            case DOUBLE: return String.valueOf(r.getDouble(i));
            case DECIMAL: {
                DecimalType d = (DecimalType) t;
                return r.getDecimal(i, d.getPrecision(), d.getScale()).toBigDecimal().toPlainString();
            }
            case VARCHAR:
            case CHAR: return r.getString(i).toString();
            case VARBINARY:
            case BINARY: {
                StringBuilder sb = new StringBuilder();
                for (byte b : r.getBinary(i)) sb.append(String.format("%02X", b));
                return sb.toString();
            }
            case DATE: return LocalDate.ofEpochDay(r.getInt(i)).toString();
            case TIME_WITHOUT_TIME_ZONE: return LocalTime.ofNanoOfDay(r.getInt(i) * 1_000_000L).format(TIME);
            case TIMESTAMP_WITHOUT_TIME_ZONE:
                return r.getTimestamp(i, 6).toLocalDateTime().format(TS);
            case ARRAY: {
                ArrayData a = r.getArray(i);
                StringBuilder sb = new StringBuilder();
                for (int j = 0; j < a.size(); j++) {
                    if (j > 0) sb.append(',');
                    sb.append(a.isNullAt(j) ? "" : a.getString(j).toString());
                }
                return sb.toString();
            }
            default: throw new IllegalArgumentException("type " + t + " is not one FormatCheck renders");
        }
    }

    static void quote(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') sb.append('\\').append(c);
            else if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
            else sb.append(c);
        }
        sb.append('"');
    }
}
