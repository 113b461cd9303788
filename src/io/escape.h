/* Escaping for each output format (escape.c): gf_escape_json, gf_escape_xml, gf_escape_md, gf_escape_tsv,
 * gf_escape_term, gf_json_put_str and gf_json_utf8 are public (include/grassflow.h, Utilities), for the
 * command-line tool writes most of these formats. */
#ifndef GF_IO_ESCAPE_H
#define GF_IO_ESCAPE_H

#include <stdio.h>

#include "grassflow_plugin.h"

#endif
