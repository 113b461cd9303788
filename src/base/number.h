/* Numbers as people read them. */
#ifndef GF_CORE_NUMBER_H
#define GF_CORE_NUMBER_H

#include "grassflow_plugin.h" /* gf_float_shortest: public (Utilities) */

#endif
