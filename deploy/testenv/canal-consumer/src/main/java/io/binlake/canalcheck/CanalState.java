package io.binlake.canalcheck;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.serializer.SerializerFeature;
import com.alibaba.otter.canal.client.kafka.KafkaCanalConnector;
import com.alibaba.otter.canal.protocol.CanalEntry;
import com.alibaba.otter.canal.protocol.FlatMessage;
import com.alibaba.otter.canal.protocol.Message;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/**
 * Reads a topic with Canal 1.1.7's own Kafka client (KafkaCanalConnector) as a Canal user
 * does, flatMessage=false (canal-protobuf: Message of CanalEntry.Entry) or true (canal-json:
 * FlatMessage), and reduces it to a table state: each row by its key columns, inserts and
 * updates putting the row after the change, deletes removing it. It stops once it has read
 * the number of Kafka messages it is told the topic holds, and prints one JSON object:
 * {"messages": records read, "ddl": DDL entries, "columns": {name: {"sqlType", "mysqlType"}},
 * "rows": {key: {column: Canal's text value or null}}}. A message the client cannot decode
 * ends it with exit status 3; not reaching the count before the deadline with 2.
 *
 * Usage: CanalState BOOTSTRAP TOPIC protobuf|flat MESSAGES TIMEOUT_SECONDS
 */
public final class CanalState {
  /** The connector with a consumer that starts at the topic's beginning (Canal's says latest). */
  static final class FromStart extends KafkaCanalConnector {
    FromStart(String servers, String topic, boolean flat) {
      super(servers, topic, null, "binlake-canal-check-" + UUID.randomUUID(), 500, flat);
      properties.put("auto.offset.reset", "earliest");
    }
  }

  private final Map<String, Map<String, String>> rows = new TreeMap<>();
  private final Map<String, Map<String, Object>> columns = new TreeMap<>();
  private long messages;
  private long ddl;

  public static void main(String[] args) throws Exception {
    if (args.length != 5) {
      System.err.println("usage: CanalState BOOTSTRAP TOPIC protobuf|flat MESSAGES TIMEOUT_SECONDS");
      System.exit(1);
    }
    boolean flat = switch (args[2]) {
      case "protobuf" -> false;
      case "flat" -> true;
      default -> throw new IllegalArgumentException("mode " + args[2] + ": want protobuf or flat");
    };
    long want = Long.parseLong(args[3]);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(Long.parseLong(args[4]));
    CanalState s = new CanalState();
    FromStart c = new FromStart(args[0], args[1], flat);
    c.connect();
    c.subscribe();
    int status = 0;
    try {
      while (s.messages < want) {
        if (System.nanoTime() > deadline) {
          System.err.printf("read %d of %d messages before the deadline%n", s.messages, want);
          status = 2;
          break;
        }
        if (flat) {
          for (FlatMessage m : c.getFlatListWithoutAck(500L, TimeUnit.MILLISECONDS)) {
            s.messages++;
            s.applyFlat(m);
          }
        } else {
          for (Message m : c.getListWithoutAck(500L, TimeUnit.MILLISECONDS)) {
            s.messages++;
            s.apply(m);
          }
        }
      }
    } catch (Exception e) {
      System.err.println("decoding failed after " + s.messages + " messages: " + e);
      e.printStackTrace();
      status = 3;
    }
    c.disconnect();
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("messages", s.messages);
    out.put("ddl", s.ddl);
    out.put("columns", s.columns);
    out.put("rows", s.rows);
    System.out.println(JSON.toJSONString(out, SerializerFeature.WriteMapNullValue));
    System.exit(status);
  }

  /** apply reduces one canal-protobuf message: its ROWDATA entries' row changes. */
  void apply(Message m) throws Exception {
    for (CanalEntry.Entry e : m.getEntries()) {
      if (e.getEntryType() != CanalEntry.EntryType.ROWDATA) {
        continue;
      }
      CanalEntry.RowChange rc = CanalEntry.RowChange.parseFrom(e.getStoreValue());
      if (rc.getIsDdl()) {
        ddl++;
        continue;
      }
      for (CanalEntry.RowData rd : rc.getRowDatasList()) {
        if (rc.getEventType() == CanalEntry.EventType.DELETE) {
          rows.remove(key(rd.getBeforeColumnsList()));
        } else {
          Map<String, String> row = new TreeMap<>();
          for (CanalEntry.Column col : rd.getAfterColumnsList()) {
            row.put(col.getName(), col.getIsNull() ? null : col.getValue());
            Map<String, Object> meta = new LinkedHashMap<>();
            meta.put("sqlType", col.getSqlType());
            meta.put("mysqlType", col.getMysqlType());
            columns.put(col.getName(), meta);
          }
          rows.put(key(rd.getAfterColumnsList()), row);
        }
      }
    }
  }

  /** key is a row's key columns' values, in column order, joined by '|'. */
  static String key(List<CanalEntry.Column> cols) {
    List<String> parts = new ArrayList<>();
    for (CanalEntry.Column col : cols) {
      if (col.getIsKey()) {
        parts.add(col.getIsNull() ? "null" : col.getValue());
      }
    }
    return String.join("|", parts);
  }

  /** applyFlat reduces one canal-json FlatMessage: its data rows (deletes: the rows deleted). */
  void applyFlat(FlatMessage m) {
    if (m.getIsDdl()) {
      ddl++;
      return;
    }
    if (m.getData() == null) {
      return;
    }
    for (Map<String, String> data : m.getData()) {
      List<String> parts = new ArrayList<>();
      for (String pk : m.getPkNames()) {
        String v = data.get(pk);
        parts.add(v == null ? "null" : v);
      }
      String k = String.join("|", parts);
      if ("DELETE".equals(m.getType())) {
        rows.remove(k);
      } else {
        rows.put(k, new TreeMap<>(data));
      }
    }
    if (m.getSqlType() != null) {
      for (Map.Entry<String, Integer> e : m.getSqlType().entrySet()) {
        Map<String, Object> meta = new LinkedHashMap<>();
        meta.put("sqlType", e.getValue());
        meta.put("mysqlType", m.getMysqlType() == null ? null : m.getMysqlType().get(e.getKey()));
        columns.put(e.getKey(), meta);
      }
    }
  }
}
