from shapelint.api import Call, Rule


class CustomOpWithoutFake(Rule):
    """
    ## What it does
    Finds calls, inside a compiled region, to a `torch.library.custom_op` that returns a value
    and has no `register_fake` (or `impl_abstract`) anywhere in the analysed tree.

    ## Why is this bad?
    Dynamo runs ops on fake tensors to learn output shapes. Without a fake implementation it
    cannot, and compilation fails with an error (not a graph break).

    ## Example
    ```python
    @torch.library.custom_op("mylib::scale", mutates_args=())
    def scale(x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        return x * s
    ```

    ## Use instead
    ```python
    @scale.register_fake
    def _(x, s):
        return torch.empty_like(x)
    ```
    """

    code = "SL401"
    name = "custom-op-without-fake"
    summary = "A custom op without register_fake is called from a compiled region"
    severity = "error"
    evidence = ("compile-error",)
    hint = "add @<op>.register_fake returning an empty tensor of the output shape"
    VALID = ['''
import torch
@torch.library.custom_op("demo::scale_ok", mutates_args=())
def scale(x: torch.Tensor) -> torch.Tensor:
    return x * 2
@scale.register_fake
def _(x):
    return torch.empty_like(x)
class M(torch.nn.Module):
    def forward(self, x):
        return scale(x)
''']
    INVALID = ['''
import torch
@torch.library.custom_op("demo::scale_nofake", mutates_args=())
def scale(x: torch.Tensor) -> torch.Tensor:
    return x * 2
class M(torch.nn.Module):
    def forward(self, x):
        return scale(x)  # error: SL401
''']

    def on_call(self, site: Call) -> None:
        if any(d.endswith("custom_op") for d in site.decorators) and not site.has_fake \
                and site.target_returns_value:
            self.report(site, f"`{site.short_code()}` calls a custom op that has no register_fake; "
                              f"torch.compile cannot propagate shapes through it and fails")
