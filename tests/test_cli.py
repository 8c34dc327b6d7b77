"""`gpu-viz`'s argument errors: each names what was wrong, in the usage of the command it was given to."""
import pytest

from gpu_viz import cli


@pytest.mark.parametrize("argv, usage, words", [
    (["--bogus"], "usage: gpu-viz [-h] command", ["choose a command", "info, doctor, bench, record, slides",
                                                  "unrecognized arguments: --bogus"]),
    ([], "usage: gpu-viz [-h] command", ["choose a command"]),
    (["slides", "--bogus"], "usage: gpu-viz slides", ["gpu-viz slides: error: unrecognized arguments: --bogus"]),
    (["info", "--json", "--x", "y"], "usage: gpu-viz info", ["unrecognized arguments: --x y"]),
    (["nosuch"], "usage: gpu-viz [-h] command", ["invalid choice: 'nosuch'"]),
])
def test_bad_arguments_are_named_by_the_parser_they_were_given_to(argv, usage, words, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2
    assert err.startswith(usage), err
    for w in words:
        assert w in err, err


@pytest.mark.parametrize("command", ["info", "doctor", "bench", "record", "slides"])
def test_every_command_help_says_what_it_does_in_plain_words(command, capsys):
    """--help is read by users: a description, no reST roles or class names from the docstrings."""
    with pytest.raises(SystemExit) as exc:
        cli.main([command, "--help"])
    out = capsys.readouterr().out
    assert exc.value.code == 0
    head, _, rest = out.partition("\n\n")
    assert rest.strip() and not rest.lstrip().startswith(("positional", "options")), out
    for marker in (":meth:", ":func:", ":class:", "``", "Preprocessor", "-->"):
        assert marker not in out, f"gpu-viz {command} --help shows {marker!r}:\n{out}"
