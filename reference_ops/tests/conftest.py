import os
import sys

# Run from the repository root, the project folder reference_ops/ would be imported as
# a namespace package and hide the real package inside it: put the project folder first.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
