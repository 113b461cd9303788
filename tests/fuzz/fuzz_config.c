/* libFuzzer: model configs, as JSON files (the first line of input) and as --set KEY=VALUE overrides
 * (every later line, applied to a preset). */
#include <stdlib.h>
#include <string.h>

#include "grassflow_plugin.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
    char *s = malloc(size + 1);
    if (!s) return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    gf_config c;
    gf_config_from_json(s, "fuzz.json", &c);
    if (gf_config_preset("hybrid-tiny", &c) == 0) {
        char *line = strchr(s, '\n');
        while (line) {
            char *next = strchr(line + 1, '\n');
            if (next) *next = '\0';
            gf_config_set(&c, line + 1);
            line = next;
        }
    }
    free(s);
    return 0;
}
