/* `ringshard stats` on data and on bucket directories, observed against
 * expected per node, capacity what-ifs, and the pictures of stats, simulate
 * and plan: well-formed XML/HTML, self-contained, carrying the numbers.
 * Well-formedness is checked by Python (xml.etree, html.parser), in a child
 * process. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ringshard/report.h"
#include "support.h"

#define DATA RS_SOURCE_DIR "/fixtures/data/"
#define INPUTS DATA "bills_a.csv.gz " DATA "bills_b.csv.gz " DATA "bills_c.csv"

static char *tmp;

/* The checker: python3 check.py FILE svg|html NEEDLE... exits 0 when the file
 * is well-formed, references nothing outside itself, runs no script, and its
 * text holds every NEEDLE. */
static const char checker[] =
    "import re, sys, xml.etree.ElementTree as ET\n"
    "from html.parser import HTMLParser\n"
    "path, kind, needles = sys.argv[1], sys.argv[2], sys.argv[3:]\n"
    "text = open(path, encoding='utf-8').read()\n"
    "bad = re.search(r'<script|@import|javascript:|(?:src|href)\\s*=\\s*[\"\\'](?!#)|url\\((?!#)', text, re.I)\n"
    "if bad:\n"
    "    sys.exit('not self-contained: ' + bad.group(0))\n"
    "if kind == 'svg':\n"
    "    root = ET.parse(path).getroot()\n"
    "    if root.tag != '{http://www.w3.org/2000/svg}svg':\n"
    "        sys.exit('root is ' + root.tag)\n"
    "    content = ''.join(root.itertext())\n"
    "else:\n"
    "    VOID = {'area','base','br','col','embed','hr','img','input','link','meta','source','track','wbr'}\n"
    "    class P(HTMLParser):\n"
    "        def __init__(self):\n"
    "            super().__init__(convert_charrefs=True)\n"
    "            self.stack, self.data, self.tags = [], [], set()\n"
    "        def handle_starttag(self, tag, attrs):\n"
    "            self.tags.add(tag)\n"
    "            if tag not in VOID:\n"
    "                self.stack.append(tag)\n"
    "        def handle_startendtag(self, tag, attrs):\n"
    "            self.tags.add(tag)\n"
    "        def handle_endtag(self, tag):\n"
    "            if not self.stack or self.stack[-1] != tag:\n"
    "                sys.exit('unbalanced </%s> at %s, open: %s' % (tag, self.getpos(), self.stack[-3:]))\n"
    "            self.stack.pop()\n"
    "        def handle_data(self, d):\n"
    "            self.data.append(d)\n"
    "    p = P()\n"
    "    p.feed(text)\n"
    "    p.close()\n"
    "    if p.stack:\n"
    "        sys.exit('unclosed: %s' % p.stack)\n"
    "    if not text.startswith('<!DOCTYPE html>') or 'svg' not in p.tags or 'table' not in p.tags:\n"
    "        sys.exit('not an HTML report with an svg and a table')\n"
    "    svgs = re.findall(r'<svg .*?</svg>', text, re.S)\n"
    "    for s in svgs:\n"
    "        ET.fromstring(s)\n"
    "    content = ''.join(p.data)\n"
    "for n in needles:\n"
    "    if n not in content:\n"
    "        sys.exit('missing text: ' + n)\n"
    "print('ok')\n";

static void setup(void)
{
    tmp = make_tmpdir();
    char path[512];
    snprintf(path, sizeof path, "%s/check.py", tmp);
    FILE *f = fopen(path, "w");
    if (!f || fputs(checker, f) < 0 || fclose(f) != 0)
        abort();
}

static void teardown(void)
{
    remove_tree(tmp);
    free(tmp);
}

TestSuite(stats, .init = setup, .fini = teardown, .timeout = 300);

/* The first word of the value of a summary line "label<2+ spaces>value". */
static const char *value_of(const char *out, const char *label, char *buf, size_t cap)
{
    size_t n = strlen(label);
    for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, label, n) == 0 && p[n] == ' ' && p[n + 1] == ' ') {
            const char *v = p + n;
            while (*v == ' ')
                v++;
            size_t len = strcspn(v, " \n");
            if (len >= cap)
                len = cap - 1;
            memcpy(buf, v, len);
            buf[len] = '\0';
            return buf;
        }
    cr_assert_fail("no line '%s' in:\n%s", label, out);
    return NULL;
}

static double field(const char *out, const char *label)
{
    char buf[128];
    return strtod(value_of(out, label, buf, sizeof buf), NULL);
}

/* Runs the checker on a file with needles. */
static void check_file(const char *path, const char *kind, const char *needles)
{
    char *out, *err;
    int rc = runf(&out, &err, "python3 %s/check.py '%s' %s %s", tmp, path, kind, needles);
    cr_assert_eq(rc, 0, "%s: %s%s", path, out, err);
    free(out);
    free(err);
}

/* mean, sd, min, max as the summary prints them, quoted for the shell. */
static void summary_needles(const char *out, char *buf, size_t cap)
{
    char a[64], b[64], c[64], d[64];
    snprintf(buf, cap, "'%s' '%s' '%s' '%s'", value_of(out, "mean", a, sizeof a), value_of(out, "sd", b, sizeof b),
             value_of(out, "min", c, sizeof c), value_of(out, "max", d, sizeof d));
}

Test(stats, data_counts_equal_the_bucket_manifest)
{
    char *out, *err;
    cr_assert_eq(runf(&out, &err,
                      "cd %s && \"$RS\" stats --nodes 50 --key bill_id --tsv " INPUTS " > a.tsv && "
                      "\"$RS\" bucket --quiet --nodes 50 --key bill_id -o b " INPUTS " && "
                      "\"$RS\" stats b --tsv > b.tsv && cmp a.tsv b.tsv && "
                      "awk -F'\\t' 'NR>1 {s+=$6} END {print s}' a.tsv",
                      tmp),
                 0, "%s", err);
    cr_assert_eq(atol(out), 29000, "%s", out);
    free(out);
    free(err);
}

Test(stats, summary_numbers_are_consistent)
{
    char *out, *err;
    cr_assert_eq(runf(&out, &err, "cd %s && \"$RS\" stats --nodes 50 --key bill_id " INPUTS " && "
                                  "\"$RS\" stats --nodes 50 --key bill_id --tsv " INPUTS " > t.tsv", tmp),
                 0, "%s", err);
    cr_assert_eq(field(out, "rows"), 29000);
    cr_assert_eq(field(out, "nodes"), 50);
    cr_assert_float_eq(field(out, "mean"), 580, 1e-9);
    double mx = field(out, "max"), mn = field(out, "min"), sd = field(out, "sd");
    cr_assert_float_eq(field(out, "max/mean"), mx / 580, 1e-4);
    cr_assert_float_eq(field(out, "min/mean"), mn / 580, 1e-4);
    cr_assert_float_eq(field(out, "relative sd"), sd / 580, 1e-5);
    cr_assert_float_eq(field(out, "expected sd (equal)"), sqrt(29000.0 / 50 * (1 - 1.0 / 50)), 0.006);
    free(out);
    /* the same numbers recomputed from the per-node table */
    cr_assert_eq(runf(&out, &err,
                      "awk -F'\\t' 'NR>1 {n++; s+=$6; q+=($6-580)^2; if (!mx||$6>mx) mx=$6; if (!mn||$6<mn) mn=$6; "
                      "r+=$7*(1-$4)+($4*29000-580)^2} END {printf \"%%d %%d %%d %%.2f %%.2f\\n\", n, mn, mx, sqrt(q/n), "
                      "sqrt(r/n)}' %s/t.tsv",
                      tmp),
                 0, "%s", err);
    int n, tmn, tmx;
    double tsd, tring;
    cr_assert_eq(sscanf(out, "%d %d %d %lf %lf", &n, &tmn, &tmx, &tsd, &tring), 5, "%s", out);
    cr_assert_eq(n, 50);
    cr_assert_eq(tmn, mn);
    cr_assert_eq(tmx, mx);
    cr_assert_float_eq(tsd, sd, 0.006);
    free(out);
    free(err);
}

/* A fixture whose answer is known: 1000 rows with the same key. Its owner
 * gets all of them (z far above); every other node is expected ~20 and
 * gets 0 (z = -sqrt(K p / (1 - p)) < -3). */
Test(stats, observed_vs_expected_flags_on_a_skewed_fixture)
{
    char *out, *err;
    cr_assert_eq(runf(&out, &err,
                      "cd %s && (echo id,v; i=0; while [ $i -lt 1000 ]; do echo hot,$i; i=$((i+1)); done) > skew.csv && "
                      "\"$RS\" locate --nodes 50 --no-header hot | cut -f3 > owner && "
                      "\"$RS\" stats --nodes 50 --tsv skew.csv > t.tsv && \"$RS\" stats --nodes 50 skew.csv > s.txt && "
                      "awk -F'\\t' -v o=\"$(cat owner)\" 'NR>1 && $1==o {print $6, $8} "
                      "NR>1 && $1!=o && $8==\"below\" && $6==0 && $7 < -3 {b++} END {print b}' t.tsv && cat s.txt",
                      tmp),
                 0, "%s", err);
    long count, below;
    char flag[16];
    cr_assert_eq(sscanf(out, "%ld %15s %ld", &count, flag, &below), 3, "%s", out);
    cr_assert_eq(count, 1000);
    cr_assert_str_eq(flag, "above");
    cr_assert_eq(below, 49);
    cr_assert_eq(field(out, "flagged"), 50);
    cr_assert_eq(field(out, "max"), 1000);
    cr_assert_eq(field(out, "min"), 0);
    free(out);
    /* a wide band flags nothing */
    cr_assert_eq(runf(&out, &err, "cd %s && \"$RS\" stats --nodes 50 --z 1000 skew.csv", tmp), 0, "%s", err);
    cr_assert_eq(field(out, "flagged"), 0);
    free(out);
    free(err);
}

Test(stats, capacity_on_data_and_on_a_directory)
{
    char *out, *err;
    cr_assert_eq(runf(&out, &err, "cd %s && \"$RS\" stats --nodes 50 --key bill_id --capacity-factor 1.1 " INPUTS, tmp), 0,
                 "%s", err);
    cr_assert_eq(field(out, "capacity"), 638);   /* ceil(1.1 * 29000 / 50) */
    double spilled = field(out, "spilled"), excess = field(out, "excess"), over = field(out, "over F*mean");
    cr_assert_geq(spilled, excess);
    cr_assert_gt(excess, 0);
    cr_assert_gt(over, 0);
    cr_assert_leq(field(out, "max after"), 638);
    free(out);
    /* the same numbers from a bucket directory, except the placement */
    cr_assert_eq(runf(&out, &err,
                      "cd %s && \"$RS\" bucket --quiet --nodes 50 --key bill_id -o b " INPUTS
                      " && \"$RS\" stats b --capacity-factor 1.1",
                      tmp),
                 0, "%s", err);
    cr_assert_eq(field(out, "capacity"), 638);
    cr_assert_eq(field(out, "excess"), excess);
    cr_assert_eq(field(out, "over F*mean"), over);
    cr_assert_null(strstr(out, "spilled"), "no keys, no placement: %s", out);
    free(out);
    /* input order matters, not the thread count */
    cr_assert_eq(runf(&out, &err,
                      "cd %s && \"$RS\" stats -j 1 --nodes 50 --key bill_id --capacity-factor 1.1 --tsv " INPUTS
                      " > j1 && \"$RS\" stats -j 2 --nodes 50 --key bill_id --capacity-factor 1.1 --tsv " INPUTS
                      " > j2 && cmp j1 j2 && head -1 j1",
                      tmp),
                 0, "%s", err);
    cr_assert(strstr(out, "\tcapacity\tload_after"), "%s", out);
    free(out);
    free(err);
}

Test(stats, pictures_of_stats)
{
    char *out, *err, needles[512], svg[512], html[512];
    cr_assert_eq(runf(&out, &err, "cd %s && \"$RS\" stats --nodes 50 --key bill_id --capacity-factor 1.25 --svg s.svg "
                                  "--html s.html " INPUTS, tmp),
                 0, "%s", err);
    summary_needles(out, needles, sizeof needles);
    snprintf(svg, sizeof svg, "%s/s.svg", tmp);
    snprintf(html, sizeof html, "%s/s.html", tmp);
    check_file(svg, "svg", needles);
    check_file(html, "html", needles);
    check_file(svg, "svg", "'29000' 'Load per node, sorted (50 nodes)' 'capacity 725' 'rows per node'");
    check_file(html, "html", "'Every node' 'expected sd'");
    free(out);
    free(err);
}

/* Names with XML's special characters, and a byte that is not UTF-8 (it
 * becomes U+FFFD in the pictures). */
Test(stats, pictures_with_awkward_node_names)
{
    char *out, *err, needles[512], path[512];
    cr_assert_eq(runf(&out, &err,
                      "cd %s && printf 'a&b\\n<c>\\nd\"e\\nf'\"'\"'g\\n\\377h\\nplain\\n' > nodes && "
                      "\"$RS\" stats --nodes-file nodes --key bill_id --svg d.svg --html d.html " INPUTS,
                      tmp),
                 0, "%s", err);
    summary_needles(out, needles, sizeof needles);
    snprintf(path, sizeof path, "%s/d.svg", tmp);
    check_file(path, "svg", needles);
    check_file(path, "svg", "'a&b' '<c>' 'd\"e' \"f'g\" '\xef\xbf\xbdh'");
    snprintf(path, sizeof path, "%s/d.html", tmp);
    check_file(path, "html", needles);
    check_file(path, "html", "'a&b' '<c>' 'd\"e' '\xef\xbf\xbdh'");
    free(out);
    free(err);
}

/* A bucket directory's pictures come from its manifest alone. */
Test(stats, pictures_of_a_bucket_directory)
{
    char *out, *err, needles[512], path[512];
    cr_assert_eq(runf(&out, &err,
                      "cd %s && printf 'a&b\\n<c>\\nd\"e\\nplain\\n' > nodes && "
                      "\"$RS\" bucket --quiet --nodes-file nodes --key bill_id -o b " INPUTS
                      " && \"$RS\" stats b --svg d.svg --html d.html",
                      tmp),
                 0, "%s", err);
    cr_assert_eq(field(out, "rows"), 29000);
    summary_needles(out, needles, sizeof needles);
    snprintf(path, sizeof path, "%s/d.svg", tmp);
    check_file(path, "svg", needles);
    check_file(path, "svg", "'a&b' '<c>'");
    snprintf(path, sizeof path, "%s/d.html", tmp);
    check_file(path, "html", needles);
    free(out);
    free(err);
}

Test(stats, pictures_of_simulate_at_1000_nodes)
{
    char *out, *err, needles[512], path[512];
    cr_assert_eq(runf(&out, &err, "cd %s && \"$RS\" simulate --keys 300000 --svg m.svg --html m.html", tmp), 0, "%s",
                 err);
    summary_needles(out, needles, sizeof needles);
    snprintf(path, sizeof path, "%s/m.svg", tmp);
    check_file(path, "svg", needles);
    check_file(path, "svg", "'Load per node, sorted (1000 nodes)' 'keys per node' 'nodes ranked by load'");
    snprintf(path, sizeof path, "%s/m.html", tmp);
    check_file(path, "html", needles);
    free(out);
    /* one bar per node at 1000 nodes (the plot is 1100 px wide) */
    cr_assert_eq(runf(&out, &err, "grep -c '<title>node ' %s/m.svg", tmp), 0, "%s", err);
    cr_assert_eq(atoi(out), 1000, "%s", out);
    free(out);
    free(err);
}

Test(stats, pictures_of_a_vnode_sweep)
{
    char *out, *err, path[512];
    cr_assert_eq(runf(&out, &err, "cd %s && \"$RS\" simulate --nodes 100 --keys 100000 --vnodes 1,10,100 --add 1 "
                                  "--svg w.svg --html w.html | awk -F'\\t' 'NR==3 {print $5}'", tmp),
                 0, "%s", err);
    cr_assert_gt(strtod(out, NULL), 0, "%s", out);
    snprintf(path, sizeof path, "%s/w.svg", tmp);
    check_file(path, "svg", "'virtual nodes per node (V)' 'observed sd / mean' 'theory: random ring' 'moved fraction'");
    snprintf(path, sizeof path, "%s/w.html", tmp);
    check_file(path, "html", "'observed sd / mean'");
    free(out);
    free(err);
}

Test(stats, pictures_of_plans)
{
    char *out, *err, path[512];
    cr_assert_eq(runf(&out, &err, "cd %s && \"$RS\" plan --nodes 200 --add 5 --svg p.svg --html p.html", tmp), 0,
                 "%s%s", out, err);
    snprintf(path, sizeof path, "%s/p.svg", tmp);
    check_file(path, "svg", "'Flows between nodes' 'receiving nodes (5)' '204'");
    snprintf(path, sizeof path, "%s/p.html", tmp);
    check_file(path, "html", "'Largest flows' '200'");
    free(out);
    free(err);
}

/* The flow API on its own, with aggregation (more nodes than pixels). */
Test(stats, flow_matrix_api)
{
    enum { N = 3000, P = 6000 };
    static char names_buf[N][16];
    static const char *names[N];
    static uint32_t from[P], to[P];
    static double w[P];
    for (int i = 0; i < N; i++) {
        snprintf(names_buf[i], sizeof names_buf[i], "n%d", i);
        names[i] = names_buf[i];
    }
    for (int p = 0; p < P; p++) {
        from[p] = (uint32_t)(p % (N - 7));
        to[p] = (uint32_t)(N - 7 + p % 7);
        w[p] = 1 + p % 13;
    }
    rs_report_fact facts[1] = {{"total", "42000 keys"}};
    rs_report_flows fl = {"flows test", "3000 nodes", "keys", N, names, P, from, to, w, facts, 1};
    char path[512];
    for (int html = 0; html < 2; html++) {
        snprintf(path, sizeof path, "%s/f.%s", tmp, html ? "html" : "svg");
        FILE *f = fopen(path, "w");
        cr_assert(f);
        cr_assert_eq(html ? rs_report_flows_html(f, &fl) : rs_report_flows_svg(f, &fl), 0);
        cr_assert_eq(fclose(f), 0);
        check_file(path, html ? "html" : "svg", "'42000 keys' 'receiving nodes (7)'");
    }
    char *out;
    cr_assert_eq(runf(&out, NULL, "grep -c 'columns aggregate consecutive nodes' %s/f.svg", tmp), 0);
    free(out);
}

Test(stats, errors)
{
    char *err;
    cr_assert_eq(run("\"$RS\" stats", NULL, &err), 64);
    cr_assert(strstr(err, "no input"), "%s", err);
    free(err);
    cr_assert_eq(run("\"$RS\" stats /nonexistent/x.csv", NULL, &err), 1);
    cr_assert(strstr(err, "/nonexistent/x.csv"), "%s", err);
    free(err);
    cr_assert_eq(runf(NULL, &err, "cd %s && \"$RS\" bucket --quiet --nodes 5 -o b " DATA "bills_c.csv && "
                                  "\"$RS\" stats --nodes 7 b", tmp),
                 64);
    cr_assert(strstr(err, "manifest.json"), "%s", err);
    free(err);
    cr_assert_eq(runf(NULL, &err, "cd %s && mkdir -p e && \"$RS\" stats e", tmp), 1);
    cr_assert(strstr(err, "manifest.json"), "%s", err);
    free(err);
    cr_assert_eq(run("\"$RS\" stats --z -1 x", NULL, &err), 64);
    free(err);
    cr_assert_eq(run("\"$RS\" stats --capacity-factor abc x", NULL, &err), 64);
    free(err);
}
