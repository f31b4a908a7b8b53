package io.binlake.canalddl;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

import com.alibaba.otter.canal.parse.inbound.mysql.ddl.DdlResult;
import com.alibaba.otter.canal.parse.inbound.mysql.ddl.DruidDdlParser;
import com.alibaba.otter.canal.protocol.CanalEntry.EventType;

/**
 * Prints the EventType Canal 1.1.7 gives each statement of a binlog QUERY event, one line
 * per statement read.
 *
 * <p>Input: one statement a line, as a JSON string ("ALTER TABLE t ADD c INT", with \n, \"
 * and the other JSON escapes), so that a statement may span lines. Output: the type's name
 * (CREATE, ALTER, ERASE, QUERY, …) a line, in the same order.
 *
 * <p>The type is what LogEventConvert.parseQueryEvent computes with the default
 * canal.instance.filter.druid.ddl=true: it starts from QUERY and, when
 * DruidDdlParser.parse(sql, schema) returns results, takes the first one's type. A null type
 * there would reach RowChange.Builder.setEventType(null), which throws
 * NullPointerException: Canal gives no entry at all, printed here as NO_ENTRY (followed by
 * the exception when DruidDdlParser itself throws one other than the ParserException it
 * turns into QUERY).
 */
public final class CanalDDLType {
    public static void main(String[] args) throws Exception {
        String schema = args.length > 0 ? args[0] : "db";
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        for (String line; (line = in.readLine()) != null;) {
            if (line.isBlank()) {
                continue;
            }
            out.println(type(jsonString(line.strip()), schema));
        }
        out.flush();
    }

    static String type(String sql, String schema) {
        EventType type = EventType.QUERY;
        List<DdlResult> results;
        try {
            results = DruidDdlParser.parse(sql, schema);
        } catch (RuntimeException e) {
            // Thrown out of parseQueryEvent too: the event fails, no entry.
            return ("NO_ENTRY " + e).replace('\n', ' ');
        }
        if (!results.isEmpty()) {
            type = results.get(0).getType();
        }
        return type == null ? "NO_ENTRY" : type.name();
    }

    /** jsonString decodes one JSON string literal. */
    static String jsonString(String s) {
        if (s.length() < 2 || s.charAt(0) != '"' || s.charAt(s.length() - 1) != '"') {
            throw new IllegalArgumentException("not a JSON string: " + s);
        }
        StringBuilder b = new StringBuilder(s.length());
        for (int i = 1; i < s.length() - 1; i++) {
            char c = s.charAt(i);
            if (c != '\\') {
                b.append(c);
                continue;
            }
            char e = s.charAt(++i);
            switch (e) {
                case 'n': b.append('\n'); break;
                case 't': b.append('\t'); break;
                case 'r': b.append('\r'); break;
                case 'b': b.append('\b'); break;
                case 'f': b.append('\f'); break;
                case 'u': b.append((char) Integer.parseInt(s.substring(i + 1, i + 5), 16)); i += 4; break;
                default: b.append(e); // \" \\ \/
            }
        }
        return b.toString();
    }
}
