/* The node-edit options of plan and simulate (--add, --add-names,
 * --remove, --reweight, --down): one parser, so that both commands take
 * the same ranges and add up repeated lists alike. */
#include "cli/cli.h"

/* Appends v to list (*n entries), at most RS_CLI_MAX_EDIT_LISTS. */
static int push(const char **list, int *n, const char *v, const char *what, rs_error *err)
{
    if (*n >= RS_CLI_MAX_EDIT_LISTS)
        return rs_error_set(err, RS_EXIT_USAGE, "%s: at most %d times (use a comma-separated list)", what,
                            RS_CLI_MAX_EDIT_LISTS);
    list[(*n)++] = v;
    return 0;
}

int rs_cli_edits_option(rs_cli_edits *ed, int code, const char *arg, rs_error *err)
{
    int rc;
    switch (code) {
    case RS_OPT_ADD: rc = rs_cli_uint("--add", arg, 1, 10000000, &ed->add, err); break;
    case RS_OPT_ADD_NAMES: rc = push(ed->add_names, &ed->nadd_names, arg, "--add-names", err); break;
    case RS_OPT_REMOVE: rc = push(ed->remove, &ed->nremove, arg, "--remove", err); break;
    case RS_OPT_REWEIGHT: rc = push(ed->reweight, &ed->nreweight, arg, "--reweight", err); break;
    case RS_OPT_DOWN: rc = push(ed->down, &ed->ndown, arg, "--down", err); break;
    default: return 0;
    }
    return rc == 0 ? 1 : -1;
}

void rs_cli_edits_fill(const rs_cli_edits *ed, rs_node_edits *e)
{
    *e = (rs_node_edits){
        .remove = ed->remove, .reweight = ed->reweight, .add_names = ed->add_names, .down = ed->down,
        .nremove = ed->nremove, .nreweight = ed->nreweight, .nadd_names = ed->nadd_names, .ndown = ed->ndown,
        .add = (uint32_t)ed->add,
    };
}

int rs_cli_edits_change(const rs_cli_edits *ed)
{
    return ed->add || ed->nadd_names || ed->nremove || ed->nreweight;
}
