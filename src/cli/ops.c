/* src/cli/ops.c: `stoker ops [NAME]`: lists the operator registry, or one operator's schema
 * (inputs, outputs, devices, arguments with type, default and doc). Public API only. */
#include <stdio.h>
#include <string.h>

#include "stoker/stoker.h"
#include "commands.h"

static void devices_text(unsigned devices, char *buf, size_t size) {
  snprintf(buf, size, "%s%s%s", devices & STK_OPDEV_CPU ? "cpu " : "", devices & STK_OPDEV_MIXED ? "mixed " : "",
           devices & STK_OPDEV_GPU ? "gpu " : "");
  size_t n = strlen(buf);
  if (n) buf[n - 1] = '\0';
}

int stk_cli_ops(int argc, char **argv) {
  if (argc > 2 || (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))) {
    printf("usage: stoker ops [NAME]\n  lists every operator, or the schema of operator NAME\n");
    return argc > 2 ? 2 : 0;
  }
  char dev[32];
  if (argc == 1) {
    int n = stk_op_count();
    for (int i = 0; i < n; i++) {
      stk_op_schema_info info;
      if (stk_op_schema(i, &info) != STK_OK) continue;
      devices_text(info.devices, dev, sizeof dev);
      const char *nl = strchr(info.doc, '\n');
      printf("%-30s %-16s %.*s\n", info.name, dev, nl ? (int)(nl - info.doc) : (int)strlen(info.doc), info.doc);
    }
    if (n == 0) printf("(no operators in this build)\n");
    return 0;
  }
  int index;
  if (stk_op_find(argv[1], &index) != STK_OK) {
    stk_cli_error("ops", "no operator named '%s' (run `stoker ops` for the list)", argv[1]);
    return 1;
  }
  stk_op_schema_info info;
  stk_op_schema(index, &info);
  devices_text(info.devices, dev, sizeof dev);
  printf("%s\n\n%s\n\ninputs: %d..%d   outputs: %d   devices: %s\n\narguments:\n", info.name, info.doc, info.min_inputs,
         info.max_inputs, info.num_outputs, dev);
  for (int a = 0; a < info.num_args; a++) {
    stk_op_arg_info arg;
    if (stk_op_arg(index, a, &arg) != STK_OK) continue;
    printf("  %-22s %-12s %s%s%s\n      %s\n", arg.name, stk_arg_type_name(arg.type),
           arg.required        ? "required"
           : arg.default_value ? "default "
                               : "optional",
           arg.required        ? ""
           : arg.default_value ? arg.default_value
                               : "",
           "", arg.doc);
  }
  printf("  %-22s %-12s default \"cpu\"\n      where the operator runs (cpu, mixed, gpu)\n", "device", "string");
  return 0;
}
