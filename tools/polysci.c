/* polysci — command-line tool: entry point and subcommand table.
 *
 * To add a subcommand: write `int cmd_NAME(int argc, char **argv)` in its own
 * tools/cmd_NAME.c, declare it in cli.h and add one line to `commands` below. */
#include "cli.h"

#include <string.h>

static int cmd_help(int argc, char **argv);
static int cmd_version(int argc, char **argv);

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv); /* argv[0] is the command name */
    const char *summary;
} command;

static const command commands[] = {
    {"run", cmd_run, "plan, run and check one conv or GEMM ('run conv', 'run gemm')"},
    {"demo", cmd_demo, "plan, run and check every layer of a layers file (default ResNet-50)"},
    {"bench", cmd_bench, "time layers: polysci's choice vs the default schedule (and oneDNN)"},
    {"rank", cmd_rank, "the planner's ranked candidate schedules with their costs ('rank conv|gemm')"},
    {"analyze", cmd_analyze, "cache working sets of a schedule ('analyze conv|gemm')"},
    {"pipeline", cmd_pipeline, "plan, run and time a benchmark pipeline with the stage-graph engine"},
    {"stencil", cmd_stencil, "plan, run and time an iterated-stencil benchmark (heat1d/2d/3d, jacobi2d)"},
    {"info", cmd_info, "the machine model: caches, latency/bandwidth, peak"},
    {"version", cmd_version, "print the library version"},
    {"help", cmd_help, "show this help, or 'help COMMAND' for a command's options"},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static const command *find_command(const char *name)
{
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (!strcmp(commands[i].name, name)) return &commands[i];
    return NULL;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: polysci COMMAND [options]\n\n"
               "Plans and runs f32 convolutions and GEMMs as polyhedrally chosen loop schedules\n"
               "around LIBXSMM batch-reduce GEMM microkernels.\n\ncommands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++) fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nRun 'polysci COMMAND --help' for a command's options.\n"
               "Exit status: 0 success, 1 failure (error or wrong result), 2 usage error.\n");
}

static int cmd_help(int argc, char **argv)
{
    if (argc < 2) {
        usage(stdout);
        return CLI_OK;
    }
    const command *c = find_command(argv[1]);
    if (!c || c->run == cmd_help) {
        if (!c) fprintf(stderr, "polysci help: unknown command '%s'\n", argv[1]);
        usage(c ? stdout : stderr);
        return c ? CLI_OK : CLI_USAGE;
    }
    static char help_flag[] = "--help";
    char *sub[] = {argv[1], help_flag, NULL};
    return c->run(2, sub);
}

static int cmd_version(int argc, char **argv)
{
    (void)argv;
    if (argc > 1) {
        fprintf(stderr, "polysci version: takes no arguments\n");
        return CLI_USAGE;
    }
    printf("polysci %s (API %d; headers %d.%d.%d)\n", ps_version(), ps_api_version(), PS_VERSION_MAJOR,
           PS_VERSION_MINOR, PS_VERSION_PATCH);
    return CLI_OK;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_USAGE;
    }
    const char *name = argv[1];
    if (!strcmp(name, "--help") || !strcmp(name, "-h")) {
        usage(stdout);
        return CLI_OK;
    }
    if (!strcmp(name, "--version")) return cmd_version(1, argv + 1);
    const command *c = find_command(name);
    if (!c) {
        fprintf(stderr, "polysci: unknown command '%s'\n\n", name);
        usage(stderr);
        return CLI_USAGE;
    }
    return c->run(argc - 1, argv + 1);
}
