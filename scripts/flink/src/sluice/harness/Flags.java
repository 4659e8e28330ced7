package sluice.harness;

import java.util.HashMap;
import java.util.Map;

/**
 * The runner's command line: {@code --name value} pairs; a {@code --name} followed by another flag
 * (or by nothing) stands for {@code true}. Unknown names are kept, so callers may pass flags a
 * scenario ignores.
 */
final class Flags {
    private final Map<String, String> values = new HashMap<>();

    static Flags parse(String[] argv) {
        Flags flags = new Flags();
        int i = 0;
        while (i < argv.length) {
            String name = argv[i];
            if (!name.startsWith("--") || name.length() == 2) {
                throw new IllegalArgumentException("expected --NAME, got '" + name + "'");
            }
            boolean hasValue = i + 1 < argv.length && !argv[i + 1].startsWith("--");
            flags.values.put(name.substring(2), hasValue ? argv[i + 1] : "true");
            i += hasValue ? 2 : 1;
        }
        return flags;
    }

    String text(String name, String fallback) {
        return values.getOrDefault(name, fallback);
    }

    long number(String name, long fallback) {
        String v = values.get(name);
        return v == null ? fallback : Long.parseLong(v.replace("_", ""));
    }

    double fraction(String name, double fallback) {
        String v = values.get(name);
        return v == null ? fallback : Double.parseDouble(v);
    }
}
