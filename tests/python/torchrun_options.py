"""Prints the option strings of the installed torchrun's argument parser, one per line.

usage: torchrun_options.py
The first line is "allow_abbrev=True|False": whether torchrun takes abbreviations of its options,
which it then also looks for in the worker's own command line.
"""
from torch.distributed.run import get_args_parser

parser = get_args_parser()
print(f"allow_abbrev={parser.allow_abbrev}")
for action in parser._actions:
    for option in action.option_strings:
        print(option)
